"""The transactions benchmark: aiokafka_lead against aiokafka and confluent-kafka.

Per run, mode and client, on a fresh topic of a 1-node cluster, one process produces
records of ``--size`` bytes in transactions of 100 records (``--small-records`` in all)
or of 10,000 records (``--large-records`` in all), committing each (acks=all, idempotence,
linger 5 ms for every client). Reported: records/s from the first send to the last
commit's return, and the latency of ``commit_transaction()`` (p50 / p99 over all of a
run's commits: flushing what is still queued, then EndTxn). Clients run one after
another in an order that rotates between runs, so a noisy neighbour does not always hit
the same one; ratios are taken within a run.

    python benchmarks/transactions.py                 # starts a local 1-node cluster
    python benchmarks/transactions.py --runs 5
    python benchmarks/transactions.py --bootstrap-server H:P --clients ours,aiokafka

Writes benchmarks/results/transactions.json, the chart docs/img/transactions.png and the
docs section benchmarks/results/transactions.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.bench import children as bench

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PLOT = ROOT / "docs" / "img" / "transactions.png"
CLIENT = ROOT / "benchmarks" / "transactions_client.py"
LABELS = {**bench.PEER_LABELS, "ours-tv1": "aiokafka_lead (TV1)"}
COLORS = {"ours": "#1f77b4", "ours-tv1": "#9ecae1", "aiokafka": "#ff7f0e", "confluent": "#2ca02c"}
#: mode -> (records per transaction, batch size for every client or None for each one's default, label)
MODES: dict[str, tuple[int, int | None, str]] = {
    "100": (100, None, "100"),
    "10000": (10_000, None, "10,000"),
    "10000-1MB": (10_000, 1_000_000, "10,000, 1 MB batches"),
}
METRICS = ("records_per_s", "commit_p50_ms", "commit_p99_ms", "cpu_us_per_record")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run_client(
    kind: str, bootstrap: str, topic: str, mode: str, *, records: int, limit_s: float
) -> dict[str, Any]:
    """One client process; its progress on one line; its RESULT with commit percentiles."""
    per_txn, batch_size, _ = MODES[mode]
    cmd = [sys.executable, str(CLIENT), "--client", kind, "--bootstrap-server", bootstrap]
    cmd += ["--topic", topic, "--per-txn", str(per_txn), "--records", str(records)]
    if batch_size is not None:
        cmd += ["--batch-size", str(batch_size)]

    def line(done: int, started: float) -> str:
        return (
            f"    {LABELS[kind]:<22} {per_txn:>6}/txn {done:>9,}/{records:,} "
            f"({anyio.current_time() - started:.0f}s)"
        )

    result = await bench.run_with_progress(cmd, line, limit_s=limit_s)
    commits = result.pop("commit_ms")
    result["commit_p50_ms"] = percentile(commits, 0.50)
    result["commit_p99_ms"] = percentile(commits, 0.99)
    return result


def aggregate(runs: list[dict[str, dict[str, Any]]], kinds: list[str], modes: list[str]) -> dict[str, Any]:
    """Per mode and client: median/min/max of each metric, and per-run ratios to the others."""
    rows: dict[str, Any] = {}
    for mode in modes:
        rows[mode] = {}
        for kind in kinds:
            cell: dict[str, Any] = {m: bench.spread_of([run[mode][kind][m] for run in runs]) for m in METRICS}
            for other in kinds:
                if other != kind:
                    r = [run[mode][kind]["records_per_s"] / run[mode][other]["records_per_s"] for run in runs]
                    cell[f"vs_{other}"] = bench.spread_of(r, keep=False)
            rows[mode][kind] = cell
    return rows


def markdown(rows: dict[str, Any], args: argparse.Namespace, env: dict[str, Any]) -> str:
    lines = [
        "| records per transaction | client | records/s: median (min-max) | vs aiokafka | vs confluent-kafka "
        "| commit p50 ms | commit p99 ms | CPU µs/record |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, per_kind in rows.items():
        for kind, c in per_kind.items():
            rate = c["records_per_s"]
            lines.append(
                f"| {MODES[mode][2]} | {LABELS[kind]} | "
                f"{rate['median']:,.0f} ({rate['min']:,.0f}-{rate['max']:,.0f}) "
                f"| {bench.ratio_text(c.get('vs_aiokafka'))} | {bench.ratio_text(c.get('vs_confluent'))} "
                f"| {c['commit_p50_ms']['median']:.1f} "
                f"| {c['commit_p99_ms']['median']:.1f} | {c['cpu_us_per_record']['median']:.1f} |"
            )
    intro = (
        "### Transactions\n\n"
        f"`python benchmarks/transactions.py` ({args.runs} runs, client order rotating): per run, mode and "
        f"client, one process produces records of {args.size} B to a fresh {args.partitions}-partition "
        f"topic of a 1-node cluster in transactions of 100 records ({args.small_records:,} records, "
        f"{args.small_records // 100} commits) or of 10,000 records ({args.large_records:,} records, "
        f"{args.large_records // 10_000} commits); acks=all, idempotence, linger 5 ms for every client; "
        "batch size: each client's default (16 KB for aiokafka_lead and aiokafka, as Java's; "
        "librdkafka's is 1 MB), and in the third mode 1 MB (1,000,000 B) for every client. "
        "records/s: from the first send to the last commit's return. Commit latency: the "
        "`commit_transaction()` call (flushing what is still queued, then EndTxn), p50 / p99 over a run's "
        "commits, median over runs. Ratios are per run, then the median (min-max).\n\n"
        f"Versions: aiokafka {env.get('aiokafka')}, confluent-kafka {env.get('confluent')} "
        f"(librdkafka {env.get('librdkafka')}), Python {env.get('python')}, Kafka {env.get('kafka')} "
        f"(transaction.version {env.get('transaction_version')}). Machine: {env.get('machine')}; "
        f"load: {env.get('load')}.\n\n![transactions](img/transactions.png)\n"
    )
    notes = (
        "\naiokafka_lead uses transaction protocol version 2 (KIP-890 part 2) when the cluster "
        "allows it, as here; aiokafka and confluent-kafka use version 1 (AddPartitionsToTxn). "
        '"aiokafka_lead (TV1)" is the same client held to version 1 (a benchmark-only switch in '
        "`benchmarks/transactions_client.py`), to separate the protocol's cost from the client's.\n"
    )
    return intro + "\n" + "\n".join(lines) + "\n" + notes


def plot(rows: dict[str, Any], path: Path, title: str) -> Path:
    """Bars per mode: records/s and commit latency p50/p99; whiskers span min-max."""
    modes = list(rows)
    kinds = list(rows[modes[0]])
    groups = [f"{MODES[m][2]} / txn".replace(", 1 MB batches / txn", " / txn\n1 MB batches") for m in modes]
    metrics = (
        ("records_per_s", "records/s (thousands)", 1000.0),
        ("commit_p50_ms", "commit latency p50 (ms)", 1.0),
        ("commit_p99_ms", "commit latency p99 (ms)", 1.0),
    )
    panels = [
        (ylabel, groups, {k: [rows[m][k][metric] for m in modes] for k in kinds}, scale, "%.1f")
        for metric, ylabel, scale in metrics
    ]
    return bench.save_bars(path, title, panels, colors=COLORS, labels=LABELS, figsize=(15, 4.6))


async def transaction_version(bootstrap: str) -> int:
    from aiokafka_lead import AIOKafkaProducer

    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=f"probe-{uuid.uuid4().hex[:6]}"
    ) as p:
        return int(p.metrics()["transaction_version"])


async def main(args: argparse.Namespace) -> int:
    kinds = bench.client_kinds(args, LABELS)
    modes = {m: args.small_records if MODES[m][0] == 100 else args.large_records for m in MODES}
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, dict[str, Any]]] = []
    async with bench.comparison_cluster(args, "transactions-") as bootstrap:
        tv = await transaction_version(bootstrap)
        async with AdminClient(bootstrap_servers=bootstrap) as admin:
            for run in range(args.runs):
                order = bench.client_order(kinds, run)
                bench.say(f"run {run + 1}/{args.runs}: {', '.join(LABELS[k] for k in order)}")
                results: dict[str, dict[str, Any]] = {}
                for mode, records in modes.items():
                    results[mode] = {}
                    for kind in order:
                        async with bench.fresh_topic(admin, f"txn-{kind}", args.partitions) as topic:
                            r = await run_client(
                                kind, bootstrap, topic, mode, records=records, limit_s=args.timeout
                            )
                        results[mode][kind] = r
                        bench.say(
                            f"    {LABELS[kind]:<22} {MODES[mode][2]:>21}/txn "
                            f"{r['records_per_s']:>9,.0f} records/s, "
                            f"commit p50 {r['commit_p50_ms']:.1f} ms p99 {r['commit_p99_ms']:.1f} ms"
                        )
                runs.append(results)
    rows = aggregate(runs, kinds, list(modes))
    env = bench.run_env(args, load=args.load, transaction_version=tv)
    config = {
        k: getattr(args, k)
        for k in ("small_records", "large_records", "size", "partitions", "runs", "clients")
    }
    (RESULTS / "transactions.json").write_text(
        json.dumps({"config": config, "env": env, "rows": rows, "runs": runs}, indent=1)
    )
    text = markdown(rows, args, env)
    bench.say("\n" + text)
    (RESULTS / "transactions.md").write_text(text)
    title = (
        f"transactional produce, {args.size} B records, acks=all, linger 5 ms: "
        f"median of {args.runs} runs (whiskers: min-max)"
    )
    bench.say(f"plot: {plot(rows, PLOT, title)}")
    return 0


if __name__ == "__main__":
    parser = bench.comparison_parser(__doc__, clients="ours,ours-tv1,aiokafka,confluent")
    parser.add_argument(
        "--small-records", type=int, default=20_000, help="records in the 100-per-transaction mode"
    )
    parser.add_argument(
        "--large-records", type=int, default=1_000_000, help="records in the 10,000-per-transaction mode"
    )
    parser.add_argument("--load", default="not stated", help="what else ran on the machine")
    sys.exit(anyio.run(main, parser.parse_args()))
