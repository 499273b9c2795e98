"""The leader-move benchmark: aiokafka_lead (hints on/off) against aiokafka, confluent-kafka
and the Java client, each producing at a fixed rate while leadership of every partition
moves, in named scenarios (aiokafka_lead/bench/scenarios.py):

- kip-conditions: broker defaults, clients behind Toxiproxy links (5 ms +- 1 ms each way,
  bandwidth the load fills to 75%); loopback when Go is missing (said in one line);
- loopback-defaults: broker defaults, loopback;
- loopback-fast-followers: the fast-followers broker profile, loopback.

Each client runs in its own process on an identical fresh topic (24 partitions, replication
factor 3, min.insync.replicas 2); acks=all, linger 0, 1 KiB records at 2,000/s after a 5 s
warm-up; leadership of all partitions is rotated (reorder replicas + preferred election) at
25%, 50% and 75% of the run. Every record is measured from its scheduled time
(start + i / rate); the time send() blocked is reported beside it. Clients alternate order
between runs. With ``--consumers``, as many productions more (ours, hints on) follow the
producer runs, each read at the same time by aiokafka_lead, aiokafka and confluent-kafka
consumers (last: confluent-kafka's consumer creates __consumer_offsets). The cluster is bare
(only the measured topics) unless ``--offsets-topic`` creates __consumer_offsets first: idle
partitions make every move wait up to replica.fetch.wait.max.ms longer (docs/kip-951.md).

    python benchmarks/leader_move.py                           # every scenario, 3 runs
    python benchmarks/leader_move.py --scenarios kip-conditions --runs 3 --duration 40
    python benchmarks/leader_move.py --bootstrap-server H:P --clients ours,ours-nohints
    python benchmarks/leader_move.py --baseline /tmp/old --clients ours,ours-base,confluent

``--baseline DIR`` adds the client ``ours-base``: aiokafka_lead imported from DIR, another
checkout (e.g. ``git worktree add /tmp/old REV``, with its C extension built).

Reports per client the median (min-max) over runs, ours' ratios to each peer taken within
each run, and p99 / p99.9 pooled over every record of every run (and of the runs without a
record of 1 s or more). Writes benchmarks/results/leader_move_<scenario>.json and .md, raw
samples under benchmarks/results/raw/, and (with matplotlib: pip install
'aiokafka_lead[plot]') plots under docs/img/.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import leader_move_report as report
from anyio.abc import Process

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.bench import java
from aiokafka_lead.bench.children import (
    BASELINE_CLIENT,
    add_baseline_option,
    baseline_env,
    children_cpu_s,
    client_order,
    compile_bytecode,
    process_cpu_s,
    read_line,
)
from aiokafka_lead.bench.leader_move import BenchConfig, fresh_topic, run_moves, table, warm_cluster
from aiokafka_lead.bench.plot import NO_PLOT, can_plot, plot_runs
from aiokafka_lead.bench.scenarios import SCENARIOS, Environment, Scenario, cluster_for
from aiokafka_lead.bench.stats import Samples, Summary, record_tails, summarize
from aiokafka_lead.testing.cluster.jars import DEFAULT_KAFKA_VERSION

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PRODUCER = ROOT / "benchmarks" / "leader_move_client.py"
CONSUMER = ROOT / "benchmarks" / "leader_move_consumer.py"
JAVA_SOURCE = ROOT / "benchmarks" / "java" / "LeaderMoveLoad.java"
LABELS = {
    "ours": report.OURS,
    "ours-nohints": report.OURS_OFF,
    "ours-2conn": report.OURS_TWO,
    "ours-1inflight": report.OURS_SERIAL,
    "ours-base": "aiokafka_lead (baseline)",
    "aiokafka": "aiokafka",
    "confluent": "confluent-kafka",
    "java": "Java client",
}
CONSUMER_LABELS = {"ours": "aiokafka_lead", "aiokafka": "aiokafka", "confluent": "confluent-kafka"}


def say(message: str) -> None:
    print(message, flush=True)


async def finish(proc: Process, name: str, errors: Path, within_s: float) -> None:
    with anyio.fail_after(within_s):
        code = await proc.wait()
    if code != 0:
        detail = (await anyio.Path(errors).read_text(errors="replace"))[-3000:]
        raise RuntimeError(f"{name} exited {code}: {detail}")


def producer_command(
    kind: str, bootstrap: str, topic: str, cfg: BenchConfig, *, out: Path, java_cp: str
) -> list[str]:
    """The client's command line (``ours-base``: ours, imported from ``--baseline``)."""
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--label", LABELS[kind],
            "--rate", str(cfg.rate), "--duration", str(cfg.duration_s), "--warmup", str(cfg.warmup_s),
            "--size", str(cfg.record_size), "--out", str(out)]  # fmt: skip
    if kind == "java":
        return java.command(java_cp, *args)
    return [sys.executable, str(PRODUCER), "--client", "ours" if kind == BASELINE_CLIENT else kind, *args]


def producer_env(kind: str, baseline: Path | None) -> dict[str, str] | None:
    return {**os.environ, **baseline_env(baseline)} if kind == BASELINE_CLIENT else None


async def run_one(
    kind: str, env: Environment, admin: AdminClient, cfg: BenchConfig, *, raw: Path, java_cp: str,
    consumers: tuple[str, ...] = (), stamp_suffix: str = "", baseline: Path | None = None,
) -> tuple[Samples, list[dict[str, Any]]]:  # fmt: skip
    """One production by ``kind`` while every leader moves (and ``consumers`` read it)."""
    topic = await fresh_topic(admin, f"lm-{kind}", cfg)
    stamp = f"{env.scenario.name}-{kind}-{int(time.time())}" + (f"-{stamp_suffix}" if stamp_suffix else "")
    out, errors = raw / f"{stamp}.json", raw / f"{stamp}.stderr"
    moves: list[tuple[float, float]] = []
    consumer_out = {c: raw / f"{stamp}-consumer-{c}.json" for c in consumers}
    procs: list[tuple[str, Process]] = []
    try:
        with errors.open("wb") as err_file:
            for c in consumers:
                total = int(cfg.rate * (cfg.warmup_s + cfg.duration_s))
                cmd = [sys.executable, str(CONSUMER), "--client", c, "--label", CONSUMER_LABELS[c],
                       "--bootstrap-server", env.bootstrap, "--topic", topic, "--partitions",
                       str(cfg.partitions), "--expect", str(total),
                       "--out", str(consumer_out[c])]  # fmt: skip
                procs.append((f"{c} consumer", await anyio.open_process(cmd, stderr=err_file)))
            for _, proc in procs:  # started together, positioned before anything is produced
                await read_line(proc, "READY", 120)
            cmd = producer_command(kind, env.bootstrap, topic, cfg, out=out, java_cp=java_cp)
            proc = await anyio.open_process(cmd, stderr=err_file, env=producer_env(kind, baseline))
            procs.insert(0, (f"{kind} producer", proc))
            line = await read_line(proc, "GO", cfg.warmup_s + 120)
            cpu_at_go = process_cpu_s(proc.pid)
            started = float(line.split()[1])
            say(f"  {LABELS[kind]}: warmed up, measuring {cfg.duration_s:.0f}s")
            await run_moves(admin, topic, cfg, started=started, moves=moves, say=say)
            cpu_before = children_cpu_s()
            for name, proc in procs:
                await finish(proc, name, errors, cfg.duration_s + 300)
            cpu_s = children_cpu_s() - cpu_before
    finally:
        for _, proc in procs:
            if proc.returncode is None:
                proc.kill()
        await admin.delete_topics([topic])
    samples = Samples.from_json(json.loads(await anyio.Path(out).read_text()))
    samples.moves = moves
    if not consumers:  # the only child: its CPU time alone
        samples.extra["cpu_s"] = cpu_s
        samples.extra["cpu_measured_s"] = cpu_s - cpu_at_go
    read = [
        report.consumer_summary(json.loads(await anyio.Path(consumer_out[c]).read_text()), started, moves)
        for c in consumers
    ]
    return samples, read


def plot(runs: list[Samples], name: str, title: str) -> str:
    if not can_plot():
        return NO_PLOT
    return f"plot: {plot_runs(runs, ROOT / 'docs' / 'img' / name, title)}"


def result_stem(scenario: str, args: argparse.Namespace) -> str:
    """``leader_move_<scenario>``, and ``_offsets-topic`` for a used cluster's results."""
    return f"leader_move_{scenario}" + ("_offsets-topic" if args.offsets_topic else "")


async def run_scenario(
    scenario: Scenario, args: argparse.Namespace, cfg: BenchConfig, java_cp: str, raw: Path
) -> dict[str, Any]:
    kinds = args.clients.split(",")
    consumers = tuple(CONSUMER_LABELS) if args.consumers else ()
    with tempfile.TemporaryDirectory(prefix="leader-move-") as tmp:
        async with cluster_for(scenario, Path(tmp), rate=cfg.rate, record_size=cfg.record_size,
                               benchmark=True, offsets_topic=args.offsets_topic, say=say) as env:  # fmt: skip
            conditions = env.describe()
            for line in conditions:
                say(line)
            per_run: list[list[Summary]] = []
            consumer_runs: list[list[dict[str, Any]]] = []
            last: list[Samples] = []
            every_run: list[Samples] = []
            async with AdminClient(bootstrap_servers=env.control_bootstrap) as admin:
                if args.cluster_warmup > 0:
                    await warm_cluster(env.bootstrap, admin, cfg, args.cluster_warmup, say=say)
                    # the first production after the warm-up is often its client's slowest
                    # (the cause is not found): one the same as the measured ones goes
                    # first, unmeasured
                    say(f"settling: one unmeasured production ({LABELS[kinds[0]]})")
                    await run_one(kinds[0], env, admin, cfg, raw=raw, java_cp=java_cp, stamp_suffix="settle",
                                  baseline=args.baseline)  # fmt: skip
                for run in range(args.runs):
                    order = client_order(kinds, run)
                    names = ", ".join(LABELS[k] for k in order)
                    say(f"\n{scenario.name} run {run + 1}/{args.runs}: {names}")
                    samples_this_run = []
                    for kind in order:
                        samples, _ = await run_one(
                            kind, env, admin, cfg, raw=raw, java_cp=java_cp, baseline=args.baseline
                        )
                        samples_this_run.append(samples)
                        say(table([summarize(samples)]).splitlines()[-1])
                    last = sorted(samples_this_run, key=lambda s: list(LABELS.values()).index(s.client))
                    per_run.append([summarize(s) for s in last])
                    every_run.extend(last)
                # after every producer run: confluent-kafka's consumer looks up a group
                # coordinator, which creates __consumer_offsets and changes the cluster's state
                for run in range(args.runs) if consumers else ():
                    say(f"\n{scenario.name} consumers {run + 1}/{args.runs}: aiokafka_lead, aiokafka, "
                        "confluent-kafka reading one production (ours)")  # fmt: skip
                    _, read = await run_one(
                        "ours", env, admin, cfg, raw=raw, java_cp=java_cp, consumers=consumers
                    )
                    consumer_runs.append(read)
    rows, ratio_rows = report.aggregate(per_run), report.ratios(per_run)
    tails = record_tails(every_run)
    text = report.scenario_markdown(rows, ratio_rows, consumer_runs)
    text += "\n\n" + report.record_tails_markdown(tails)
    say("\n" + "\n".join(conditions) + "\n\n" + text)
    title = f"{scenario.name}: produce latency from the schedule, last run"
    say(plot(last, f"{result_stem(scenario.name, args)}.png", title))
    return {"scenario": scenario.name, "conditions": conditions, "rows": rows, "ratios": ratio_rows,
            "runs": [[s.row() for s in r] for r in per_run], "consumers": consumer_runs,
            "record_tails": [t.row() for t in tails],
            "markdown": text}  # fmt: skip


async def main(args: argparse.Namespace) -> int:
    cfg = BenchConfig(
        rate=args.rate, duration_s=args.duration, partitions=args.partitions, warmup_s=args.warmup
    )
    raw = RESULTS / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    compile_bytecode(ROOT, args.baseline)
    java_cp = ""
    if "java" in args.clients.split(","):
        java_cp = await anyio.to_thread.run_sync(java.build, JAVA_SOURCE, args.kafka_version)
    intro = (
        f"{args.runs} run(s) per scenario; each: {cfg.partitions} partitions, replication factor "
        f"{cfg.replication_factor}, min.insync.replicas 2, acks=all, linger 0, {cfg.record_size} B records "
        f"at {cfg.rate:.0f}/s for {cfg.duration_s:.0f}s after a {cfg.warmup_s:.0f}s warm-up; leadership of "
        f"every partition rotated at {', '.join(f'{m * 100:.0f}%' for m in cfg.move_at)} of the run; "
        "latency from "
        f"each record's scheduled time. Cells: median (min-max over runs). Machine: {args.machine}."
    )
    for name in args.scenarios.split(","):  # each scenario's results are written as it ends
        r = await run_scenario(SCENARIOS[name], args, cfg, java_cp, raw)
        md = [intro, "", f"### {r['scenario']}", "", *(f"- {c}" for c in r["conditions"]), "", r["markdown"]]
        stem = result_stem(name, args)
        (RESULTS / f"{stem}.md").write_text("\n".join(md) + "\n")
        summary = json.dumps({"config": repr(cfg), "machine": args.machine, **r}, indent=1)
        (RESULTS / f"{stem}.json").write_text(summary)
        say(f"\nresults: {RESULTS / f'{stem}.md'}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=", ".join(SCENARIOS))
    parser.add_argument("--clients", default="ours,ours-nohints,ours-2conn,aiokafka,confluent,java")
    parser.add_argument("--consumers", action="store_true", help="also the consumer comparison")
    parser.add_argument(
        "--offsets-topic",
        action="store_true",
        help="create __consumer_offsets first (50 idle partitions, as on a used cluster); results "
        "go to leader_move_<scenario>_offsets-topic.*",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=5, help="per-client warm-up seconds")
    parser.add_argument("--cluster-warmup", type=float, default=30, help="unmeasured load first")
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--partitions", type=int, default=24)
    parser.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION)
    parser.add_argument("--machine", default="2 cores, 24 GiB")
    add_baseline_option(parser)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop clusters and proxies on kill too
    sys.exit(anyio.run(main, parser.parse_args()))
