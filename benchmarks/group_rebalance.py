"""Group rebalance benchmark: a 4th member joins a 3-member group while records flow.

For each client (aiokafka_lead, confluent-kafka) and protocol variant (classic eager with the
range assignor, classic cooperative-sticky, KIP-848 consumer protocol), in the same run and
on the same cluster: a fresh 12-partition topic (replication factor 3) receives records at a
fixed rate; three members join and deliver; then a fourth member joins. Measured:

* settle: from starting the 4th member to a stable assignment (4 members x 3 partitions);
* stall: the longest time one of the three original members went without delivering
  records after the join (its normal gap between deliveries is shown as the baseline).

    python benchmarks/group_rebalance.py                  # starts a local 3-node cluster
    python benchmarks/group_rebalance.py --runs 3 --clients ours,confluent

Writes benchmarks/results/group_rebalance.json and .md, and docs/img/group_rebalance.png
when matplotlib is present. Each measurement runs in its own process
(benchmarks/group_rebalance_client.py); client order alternates between runs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.testing.cluster import KafkaCluster

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CLIENT = ROOT / "benchmarks" / "group_rebalance_client.py"
LABELS = {"ours": "aiokafka_lead", "confluent": "confluent-kafka"}
VARIANTS = {
    "eager": "classic eager (range)",
    "cooperative": "classic cooperative-sticky",
    "consumer": "consumer (KIP-848)",
}


def say(message: str) -> None:
    print(message, flush=True)


async def produce(bootstrap: str, topic: str, partitions: int, rate: float, stop: anyio.Event) -> None:
    """``rate`` records/s spread over every partition, paced from the scheduled time."""
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks=1) as producer:
        interval = partitions / rate
        next_at = time.monotonic()
        while not stop.is_set():
            for p in range(partitions):
                await producer.send(topic, b"x" * 100, partition=p)  # enqueues; delivery is not awaited
            next_at += interval
            await anyio.sleep(max(0.0, next_at - time.monotonic()))


def gaps(deliveries: list[float], start: float, end: float) -> float:
    """The longest time without a delivery inside [start, end]."""
    points = [start] + [t for t in deliveries if start < t < end] + [end]
    return max(b - a for a, b in itertools.pairwise(points))


def measure(raw: dict[str, Any], warm: float) -> dict[str, float]:
    joined, settled, ended = raw["joined_at"], raw["settled_at"], raw["ended_at"]
    return {
        "settle_s": settled - joined,
        "stall_s": max(gaps(d, joined, ended) for d in raw["deliveries"]),
        "baseline_gap_s": max(gaps(d, joined - warm, joined) for d in raw["deliveries"]),
    }


async def one(
    bootstrap: str, admin: AdminClient, client: str, variant: str, args: argparse.Namespace
) -> dict[str, float]:
    tag = f"{client}-{variant}-{uuid.uuid4().hex[:6]}"
    topic, group = f"rebalance-{tag}", f"rebalance-{tag}"
    await admin.create_topics([NewTopic(topic, args.partitions, 3)])
    cmd = [sys.executable, str(CLIENT), "--client", client, "--variant", variant]
    cmd += ["--bootstrap-server", bootstrap, "--topic", topic, "--group", group]
    cmd += ["--partitions", str(args.partitions), "--warm", str(args.warm), "--after", str(args.after)]
    stop = anyio.Event()
    out = bytearray()
    async with anyio.create_task_group() as tg:
        tg.start_soon(produce, bootstrap, topic, args.partitions, args.rate, stop)
        async with await anyio.open_process(cmd) as proc:

            async def progress() -> None:
                assert proc.stderr is not None
                async for chunk in proc.stderr:
                    for line in chunk.decode(errors="replace").splitlines():
                        say(f"    [{LABELS[client]} {variant}] {line}")

            async def result() -> None:
                assert proc.stdout is not None
                async for chunk in proc.stdout:
                    out.extend(chunk)

            tg.start_soon(progress)
            tg.start_soon(result)
            code = await proc.wait()
        stop.set()
    await admin.delete_topics([topic])
    if code != 0:
        raise RuntimeError(f"{client} {variant}: the measuring process exited with {code}")
    return measure(json.loads(out.decode()), args.warm)


def aggregate(
    samples: dict[tuple[str, str], list[dict[str, float]]], failed: dict[tuple[str, str], int]
) -> list[dict[str, Any]]:
    rows = []
    for (client, variant), runs in samples.items():
        row: dict[str, Any] = {
            "client": LABELS[client],
            "variant": VARIANTS[variant],
            "runs": len(runs),
            "failed": failed.get((client, variant), 0),
        }
        for key in ("settle_s", "stall_s", "baseline_gap_s"):
            values = [r[key] for r in runs]
            row[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        rows.append(row)
    return rows


def markdown(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    def cell(d: dict[str, float]) -> str:
        return f"{d['median']:.2f} ({d['min']:.2f}-{d['max']:.2f})"

    lines = [
        "| protocol | client | settle s | longest stall of the 3 others s | baseline gap s | runs (failed) |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["variant"], r["client"])):
        lines.append(
            f"| {r['variant']} | {r['client']} | {cell(r['settle_s'])} | {cell(r['stall_s'])} | "
            f"{cell(r['baseline_gap_s'])} | {r['runs']} ({r['failed']}) |"
        )
    intro = (
        f"{args.runs} run(s); {args.partitions} partitions (replication factor 3), "
        f"{args.rate:.0f} records/s; "
        f"a 4th member joins after {args.warm:.0f} s of steady delivery by 3 members. Cells: median "
        f"(min-max over runs). Machine: {args.machine}; {getattr(args, 'load', 'load not recorded')}."
    )
    return intro + "\n\n" + "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    variants = [v for v in VARIANTS.values() if any(r["variant"] == v for r in rows)]
    clients = [c for c in LABELS.values() if any(r["client"] == c for r in rows)]
    width = 0.8 / max(len(clients), 1)
    panels = (("settle_s", "time to a stable assignment"), ("stall_s", "longest stall of the 3 others"))
    for ax, (key, title) in zip(axes, panels, strict=True):
        for i, client in enumerate(clients):
            xs, ys, lo, hi = [], [], [], []
            for j, variant in enumerate(variants):
                row = next((r for r in rows if r["client"] == client and r["variant"] == variant), None)
                if row is None:
                    continue
                d = row[key]
                xs.append(j + i * width)
                ys.append(d["median"])
                lo.append(d["median"] - d["min"])
                hi.append(d["max"] - d["median"])
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=client)
        ax.set_xticks(
            [j + width * (len(clients) - 1) / 2 for j in range(len(variants))], variants, fontsize=8
        )
        ax.set_ylabel("seconds (median, min-max)")
        ax.set_title(f"4th member joins: {title}")
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


async def main(args: argparse.Namespace) -> int:
    clients = args.clients.split(",")
    variants = args.variants.split(",")
    samples: dict[tuple[str, str], list[dict[str, float]]] = {}
    failed: dict[tuple[str, str], int] = {}
    load_before = os.getloadavg()
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="group-rebalance-") as tmp:
        cluster = None
        bootstrap = args.bootstrap_server
        if bootstrap is None:
            say("starting a local 3-node KRaft cluster (benchmark JVM settings)...")
            cluster = KafkaCluster(tmp, brokers=3, benchmark=True)
            await anyio.to_thread.run_sync(cluster.up)
            bootstrap = cluster.bootstrap()
        try:
            async with AdminClient(bootstrap_servers=bootstrap) as admin:
                for run in range(args.runs):
                    order = [(c, v) for v in variants for c in clients]
                    if run % 2:
                        order.reverse()
                    for n, (client, variant) in enumerate(order, 1):
                        what = f"{LABELS[client]}, {VARIANTS[variant]}"
                        say(f"run {run + 1}/{args.runs}, {n}/{len(order)}: {what}")
                        try:
                            with anyio.fail_after(300):
                                m = await one(bootstrap, admin, client, variant, args)
                        except Exception as exc:  # one bad measurement is reported, not fatal
                            failed[(client, variant)] = failed.get((client, variant), 0) + 1
                            say(f"  failed: {exc!r}")
                            continue
                        samples.setdefault((client, variant), []).append(m)
                        say(
                            f"  settle {m['settle_s']:.2f} s, longest stall {m['stall_s']:.2f} s "
                            f"(baseline gap {m['baseline_gap_s']:.2f} s)"
                        )
        finally:
            if cluster is not None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(cluster.down)
    rows = aggregate(samples, failed)
    args.load = (
        f"load average (1/5/15 min) {'/'.join(f'{v:.1f}' for v in load_before)} at the start, "
        f"{'/'.join(f'{v:.1f}' for v in os.getloadavg())} at the end; {time.time() - started:.0f} s"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw = {f"{c}/{v}": runs for (c, v), runs in samples.items()}
    (RESULTS / "group_rebalance.json").write_text(json.dumps({"rows": rows, "runs": raw}, indent=1))
    text = markdown(rows, args)
    (RESULTS / "group_rebalance.md").write_text(text)
    say("\n" + text)
    path = plot(rows, ROOT / "docs" / "img" / "group_rebalance.png")
    say(f"plot: {path}" if path else "matplotlib not installed: no plot")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bootstrap-server")
    parser.add_argument("--clients", default="ours,confluent")
    parser.add_argument("--variants", default="eager,cooperative,consumer")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--rate", type=float, default=600)
    parser.add_argument("--warm", type=float, default=3.0)
    parser.add_argument("--after", type=float, default=3.0)
    parser.add_argument("--machine", default="2 cores shared, loopback")
    sys.exit(anyio.run(main, parser.parse_args()))
