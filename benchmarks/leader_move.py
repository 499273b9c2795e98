"""The leader-move benchmark: aiokafka_lead (hints on/off) against aiokafka, confluent-kafka
and the Java client, each producing at a fixed rate while leadership of every partition moves.

Each client runs in its own process on an identical fresh topic (24 partitions, replication
factor 3, min.insync.replicas 2); acks=all, linger 0, 1 KiB records at 2,000/s for 60 s after a
5 s warm-up; leadership of all partitions is rotated (reorder replicas + preferred
election) at 25%, 50% and 75% of the run. Clients alternate order between runs.

    python benchmarks/leader_move.py                     # starts a local 3-node cluster
    python benchmarks/leader_move.py --runs 3 --duration 60
    python benchmarks/leader_move.py --bootstrap-server H:P --clients ours,ours-nohints

Writes benchmarks/results/leader_move.json (summaries), raw samples under
benchmarks/results/raw/, plots under docs/img/, and the table in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from aiokafka_lead.admin import AIOKafkaAdminClient
from aiokafka_lead.bench.leader_move import BenchConfig, fresh_topic, run_moves, table, warm_cluster
from aiokafka_lead.bench.plot import plot_runs
from aiokafka_lead.bench.stats import Samples, Summary, summarize
from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.cluster.tools import run_tool

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CLIENT = ROOT / "benchmarks" / "leader_move_client.py"
LABELS = {
    "ours": "aiokafka_lead hints on",
    "ours-nohints": "aiokafka_lead hints off",
    "aiokafka": "aiokafka",
    "confluent": "confluent-kafka",
    "java": "Java client (perf tool)",
}
JAVA_SUMMARY = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec .*?([\d.]+) ms avg latency, ([\d.]+) ms max latency, "
    r"(\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th"
)


def say(message: str) -> None:
    print(message, flush=True)


async def run_python_client(
    kind: str, bootstrap: str, admin: AIOKafkaAdminClient, cfg: BenchConfig, raw: Path
) -> Samples:
    topic = await fresh_topic(admin, f"lm-{kind}", cfg)
    out = raw / f"{kind}-{int(time.time())}.json"
    cmd = [
        sys.executable,
        str(CLIENT),
        "--client",
        kind,
        "--label",
        LABELS[kind],
        "--bootstrap-server",
        bootstrap,
    ]
    cmd += ["--topic", topic, "--rate", str(cfg.rate), "--duration", str(cfg.duration_s)]
    cmd += ["--warmup", str(cfg.warmup_s), "--size", str(cfg.record_size), "--out", str(out)]
    moves: list[tuple[float, float]] = []
    errors = bytearray()
    try:
        async with await anyio.open_process(cmd) as proc, anyio.create_task_group() as tg:
            assert proc.stdout is not None and proc.stderr is not None
            stderr = proc.stderr

            async def drain_stderr() -> None:
                async for chunk in stderr:
                    errors.extend(chunk)
                    del errors[:-4000]

            tg.start_soon(drain_stderr)
            with anyio.fail_after(cfg.warmup_s + 120):
                line = await BufferedByteReceiveStream(proc.stdout).receive_until(b"\n", 4096)
            started = float(line.split()[1])
            say(f"  {LABELS[kind]}: warmed up, measuring {cfg.duration_s:.0f}s")
            await run_moves(admin, topic, cfg, started=started, moves=moves, say=say)
            with anyio.fail_after(cfg.duration_s + 300):
                code = await proc.wait()
            if code != 0:
                raise RuntimeError(f"{kind} client exited {code}: {errors.decode(errors='replace')}")
    finally:
        await admin.delete_topics([topic])
    samples = Samples.from_json(json.loads(out.read_text()))
    samples.moves = moves
    return samples


async def run_java(
    bootstrap: str, admin: AIOKafkaAdminClient, cfg: BenchConfig, kafka_version: str
) -> tuple[Summary, dict[str, Any]]:
    """Kafka's ProducerPerformance (the reference implementation of KIP-951).

    Kafka 4.1's tool has no warm-up option: its percentiles include the first
    ``warmup_s`` seconds (client JIT warm-up), which can only make its tail look worse.
    """
    topic = await fresh_topic(admin, "lm-java", cfg)
    warm = int(cfg.rate * cfg.warmup_s)
    total = warm + int(cfg.rate * cfg.duration_s)
    args = ["--topic", topic, "--num-records", str(total), "--record-size", str(cfg.record_size)]
    args += ["--throughput", str(int(cfg.rate)), "--producer-props"]
    args += [f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=0", "enable.idempotence=true"]
    moves: list[tuple[float, float]] = []
    output: list[str] = []
    try:
        async with anyio.create_task_group() as tg:

            async def perf() -> None:
                output.append(
                    await anyio.to_thread.run_sync(
                        lambda: run_tool(
                            kafka_version, "org.apache.kafka.tools.ProducerPerformance", *args, timeout=600
                        )
                    )
                )

            tg.start_soon(perf)
            started = time.time() + 1.5 + cfg.warmup_s  # JVM start-up, then the warm-up records
            say(f"  {LABELS['java']}: started; moves scheduled after its warm-up")
            await run_moves(admin, topic, cfg, started=started, moves=moves, say=say)
    finally:
        await admin.delete_topics([topic])
    matches = JAVA_SUMMARY.findall(output[0])
    if not matches:
        raise RuntimeError(f"no summary in ProducerPerformance output:\n{output[0][-2000:]}")
    records, _rate, _avg, max_ms, p50, _p95, p99, p999 = matches[-1]
    summary = Summary(
        client=LABELS["java"],
        records=int(records),
        failed=0,
        p50_ms=float(p50),
        p99_ms=float(p99),
        p999_ms=float(p999),
        max_ms=float(max_ms),
        stall_ms=[math.nan] * len(moves),
        over_100ms=-1,
    )
    return summary, {"moves": moves}


def aggregate(per_run: list[list[Summary]]) -> list[dict[str, Any]]:
    """Median and spread (min-max) of each metric per client over the runs."""
    by_client: dict[str, list[Summary]] = {}
    for run in per_run:
        for s in run:
            by_client.setdefault(s.client, []).append(s)
    rows = []
    for client, items in by_client.items():
        row: dict[str, Any] = {"client": client, "runs": len(items), "failed": sum(s.failed for s in items)}
        for key in ("p50_ms", "p99_ms", "p999_ms", "max_ms"):
            values = [getattr(s, key) for s in items]
            row[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        stalls = [v for s in items for v in s.stall_ms if not math.isnan(v)]
        row["worst_stall_ms"] = {"median": statistics.median(stalls), "max": max(stalls)} if stalls else None
        rows.append(row)
    return rows


def markdown(rows: list[dict[str, Any]], cfg: BenchConfig, runs: int, env: dict[str, Any]) -> str:
    def cell(d: dict[str, float]) -> str:
        return f"{d['median']:.0f} ({d['min']:.0f}-{d['max']:.0f})"

    lines = [
        "| client | p50 ms | p99 ms | p99.9 ms | max ms | worst stall per move ms (median / max) | failed |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        stall = r["worst_stall_ms"]
        stall_txt = f"{stall['median']:.0f} / {stall['max']:.0f}" if stall else "not observable"
        lines.append(
            f"| {r['client']} | {cell(r['p50_ms'])} | {cell(r['p99_ms'])} | {cell(r['p999_ms'])} | "
            f"{cell(r['max_ms'])} | {stall_txt} | {r['failed']} |"
        )
    intro = (
        f"{runs} run(s); each: {cfg.partitions} partitions, replication factor {cfg.replication_factor}, "
        f"acks=all, linger 0, {cfg.record_size} B records at {cfg.rate:.0f}/s for {cfg.duration_s:.0f}s "
        f"after a {cfg.warmup_s:.0f}s warm-up; leadership of every partition rotated at "
        f"{', '.join(f'{m * 100:.0f}%' for m in cfg.move_at)} of the run. Cells: median (min-max over runs). "
        f"Machine: {env.get('machine')}."
    )
    return intro + "\n\n" + "\n".join(lines) + "\n"


async def main(args: argparse.Namespace) -> int:
    cfg = BenchConfig(
        rate=args.rate, duration_s=args.duration, partitions=args.partitions, warmup_s=args.warmup
    )
    kinds = args.clients.split(",")
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw = RESULTS / "raw"
    raw.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="leader-move-") as tmp:
        cluster = None
        bootstrap = args.bootstrap_server
        if bootstrap is None:
            say("starting a local 3-node KRaft cluster (benchmark JVM settings)...")
            cluster = KafkaCluster(tmp, brokers=3, benchmark=True)
            await anyio.to_thread.run_sync(cluster.up)
            bootstrap = cluster.bootstrap()
        try:
            per_run: list[list[Summary]] = []
            last_samples: list[Samples] = []
            async with AIOKafkaAdminClient(bootstrap_servers=bootstrap) as admin:
                if args.cluster_warmup > 0:
                    await warm_cluster(bootstrap, admin, cfg, args.cluster_warmup, say=say)
                for run in range(args.runs):
                    order = kinds if run % 2 == 0 else list(reversed(kinds))
                    say(f"\nrun {run + 1}/{args.runs}: {', '.join(LABELS[k] for k in order)}")
                    summaries: list[Summary] = []
                    samples_this_run: list[Samples] = []
                    for kind in order:
                        if kind == "java":
                            summary, _ = await run_java(bootstrap, admin, cfg, args.kafka_version)
                        else:
                            samples = await run_python_client(kind, bootstrap, admin, cfg, raw)
                            samples_this_run.append(samples)
                            summary = summarize(samples)
                        summaries.append(summary)
                        say(table([summary]).splitlines()[-1])
                    per_run.append(summaries)
                    last_samples = sorted(
                        samples_this_run,
                        key=lambda s: kinds.index(next(k for k, v in LABELS.items() if v == s.client)),
                    )
        finally:
            if cluster is not None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(cluster.down)
    rows = aggregate(per_run)
    env = {"machine": args.machine, "kafka": args.kafka_version, "python": sys.version.split()[0]}
    (RESULTS / "leader_move.json").write_text(
        json.dumps(
            {
                "config": cfg.__repr__(),
                "env": env,
                "rows": rows,
                "runs": [[s.row() for s in r] for r in per_run],
            },
            indent=1,
        )
    )
    say("\n" + markdown(rows, cfg, args.runs, env))
    if last_samples:
        path = plot_runs(
            last_samples,
            ROOT / "docs" / "img" / "leader_move.png",
            "Produce latency while every partition's leader moves (last run)",
        )
        say(f"plot: {path}")
    (RESULTS / "leader_move.md").write_text(markdown(rows, cfg, args.runs, env))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bootstrap-server")
    parser.add_argument("--clients", default="ours,ours-nohints,aiokafka,confluent,java")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=5, help="per-client warm-up seconds")
    parser.add_argument(
        "--cluster-warmup", type=float, default=30, help="unmeasured load before the first run"
    )
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--partitions", type=int, default=24)
    parser.add_argument("--kafka-version", default="4.1.1")
    parser.add_argument("--machine", default="2 cores, 24 GiB, loopback")
    sys.exit(anyio.run(main, parser.parse_args()))
