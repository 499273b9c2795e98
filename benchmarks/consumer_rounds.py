"""Consumer rate, round by round: does it hold steady on a freshly written topic?

Per round and client (order alternating between rounds), a fresh topic of ``--partitions``
partitions (RF1) on a ``--brokers``-node cluster is written by that client's producer
(``--records`` records of ``--size`` B, acks=1), then read whole by that client's consumer in a
new process (assign mode, from the earliest offset), as ``benchmarks/throughput.py`` does. Each
round's consumer rate and CPU per record are printed; the summary gives the median, min-max
and spread ((max - min) / median) per client.

    python benchmarks/consumer_rounds.py                     # a local 3-node cluster, 10 rounds
    python benchmarks/consumer_rounds.py --rounds 4 --clients ours --records 200000
    python benchmarks/consumer_rounds.py --bootstrap-server H:P

Writes benchmarks/results/consumer_rounds.json and, with matplotlib, docs/img/consumer_rounds.png.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.bench import children as bench
from aiokafka_lead.bench.plot import NO_PLOT, can_plot

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "consumer_rounds.json"
PLOT = ROOT / "docs" / "img" / "consumer_rounds.png"


async def main(args: Any) -> int:
    kinds = bench.client_kinds(args, throughput.LABELS)
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    async with (
        bench.comparison_cluster(args, "consumer-rounds-") as bootstrap,
        AdminClient(bootstrap_servers=bootstrap) as admin,
    ):
        for n in range(args.rounds):
            order = kinds if n % 2 == 0 else kinds[::-1]
            for kind in order:
                async with bench.fresh_topic(admin, f"cr-{kind}", args.partitions) as topic:
                    await throughput.run_side(kind, "produce", bootstrap, topic, args)
                    r = await throughput.run_side(kind, "consume", bootstrap, topic, args)
                rates[kind].append(r["records_per_s"])
                cpu[kind].append(r["cpu_us_per_record"])
                bench.say(
                    f"round {n + 1}/{args.rounds} {throughput.LABELS[kind]:<16} consume "
                    f"{r['records_per_s']:>11,.0f} records/s, {r['cpu_us_per_record']:.2f} µs/record"
                )
    env = bench.run_env(
        args, brokers=f"{args.brokers} local nodes" if args.bootstrap_server is None else "external"
    )
    summary = {
        k: {"records_per_s": bench.spread_of(rates[k]), "cpu_us_per_record": bench.spread_of(cpu[k])}
        for k in kinds
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps({"env": env, "rates": rates, "cpu": cpu, "summary": summary}, indent=1))
    bench.say("\n| client | records/s: median (min-max) | spread | CPU µs/record |\n|---|---|---|---|")
    for kind, row in summary.items():
        rate = row["records_per_s"]
        bench.say(
            f"| {throughput.LABELS[kind]} | {rate['median']:,.0f} ({rate['min']:,.0f}-{rate['max']:,.0f}) | "
            f"{throughput.spread(rate):.0f}% | {row['cpu_us_per_record']['median']:.2f} |"
        )
    bench.say(f"plot: {plot(rates, args)}" if can_plot() else NO_PLOT)
    return 0


def plot(rates: dict[str, list[float]], args: Any) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for kind, values in rates.items():
        ax.plot(
            range(1, len(values) + 1), [v / 1000 for v in values], marker="o", label=throughput.LABELS[kind]
        )
    ax.set_xlabel("round")
    ax.set_ylabel("consumer records/s (thousands)")
    ax.set_ylim(bottom=0)
    ax.set_title(
        f"{args.records:,} records of {args.size} B, {args.partitions} partitions, {args.brokers} brokers"
    )
    ax.legend()
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)
    plt.close(fig)
    return PLOT


if __name__ == "__main__":
    parser = bench.comparison_parser(__doc__, clients="ours,aiokafka")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--brokers", type=int, default=3)
    sys.exit(anyio.run(main, parser.parse_args()))
