"""Schema Registry serdes: CPU per record to serialise and to deserialise an Avro record whose
schema is cached, aiokafka_lead's against confluent-kafka's (its asyncio serdes, and its
synchronous ones as a floor).

Each run starts every client in its own process (benchmarks/schema_registry_client.py), in
an order that rotates between runs; a process registers the schema once with the in-memory
registry this script serves (aiokafka_lead.testing.schema_registry), then times
``--records`` serialisations and as many deserialisations with the process's CPU clock. No
broker is involved: the figure is the serdes alone. The summary gives, per client and step,
the median over the runs, min-max and the spread ((max - min) / median), and the ratio of
each client's median to ours.

    python benchmarks/schema_registry.py                      # 5 runs of 200,000 records
    python benchmarks/schema_registry.py --runs 3 --records 50000 --clients ours,confluent

Writes benchmarks/results/schema_registry.json and, with matplotlib, docs/img/schema_registry.png.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import anyio

from aiokafka_lead.bench import children as bench
from aiokafka_lead.bench.plot import NO_PLOT, can_plot
from aiokafka_lead.testing.schema_registry import SchemaRegistryServer

ROOT = Path(__file__).resolve().parent.parent
CHILD = Path(__file__).resolve().parent / "schema_registry_client.py"
RESULT = ROOT / "benchmarks" / "results" / "schema_registry.json"
PLOT = ROOT / "docs" / "img" / "schema_registry.png"
LABELS = {
    "ours": "aiokafka_lead",
    "confluent": "confluent-kafka (async)",
    "confluent-sync": "confluent-kafka (sync)",
}
COLORS = {"ours": "tab:blue", "confluent": "tab:orange", "confluent-sync": "tab:gray"}
STEPS = ("serialize_us", "deserialize_us", "total_us")


async def main(args: argparse.Namespace) -> int:
    kinds = bench.client_kinds(args, LABELS)
    figures: dict[str, dict[str, list[float]]] = {k: {s: [] for s in STEPS} for k in kinds}
    with SchemaRegistryServer() as registry:
        bench.say(f"in-memory schema registry on {registry.url}")
        for run in range(args.runs):
            for kind in bench.client_order(kinds, run):
                cmd = [sys.executable, str(CHILD), kind, "--registry", registry.url]
                cmd += ["--records", str(args.records), "--size", str(args.size)]
                total = 2 * args.records

                def line(
                    done: int, started: float, kind: str = kind, run: int = run, total: int = total
                ) -> str:
                    percent = min(done, total) * 100 // total
                    return f"run {run + 1}/{args.runs} {LABELS[kind]:<24} {percent:>3}%"

                result = await bench.run_with_progress(cmd, line, limit_s=args.timeout)
                for step in STEPS:
                    figures[kind][step].append(result[step])
                bench.say(
                    f"run {run + 1}/{args.runs} {LABELS[kind]:<24} "
                    f"serialise {result['serialize_us']:.2f} µs, "
                    f"deserialise {result['deserialize_us']:.2f} µs per record"
                )
    summary = {k: {s: bench.spread_of(v) for s, v in steps.items()} for k, steps in figures.items()}
    env = {"machine": args.machine, "python": sys.version.split()[0], **bench.peer_versions()}
    env |= {"records": args.records, "runs": args.runs, "customer_field_bytes": args.size}
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps({"env": env, "summary": summary}, indent=1))
    bench.say("\n| client | serialise µs | deserialise µs | both µs: median (min-max) | spread | vs ours |")
    bench.say("|---|---|---|---|---|---|")
    base = (
        summary[kinds[0]]["total_us"]["median"]
        if "ours" not in summary
        else summary["ours"]["total_us"]["median"]
    )
    for kind, row in summary.items():
        both = row["total_us"]
        spread = (both["max"] - both["min"]) / both["median"] * 100
        bench.say(
            f"| {LABELS[kind]} | {row['serialize_us']['median']:.2f} | "
            f"{row['deserialize_us']['median']:.2f} | "
            f"{both['median']:.2f} ({both['min']:.2f}-{both['max']:.2f}) | {spread:.0f}% | "
            f"{both['median'] / base:.2f}x |"
        )
    bench.say(f"results: {RESULT}")
    bench.say(f"plot: {plot(summary, args)}" if can_plot() else NO_PLOT)
    return 0


def plot(summary: dict[str, dict[str, Any]], args: argparse.Namespace) -> Path:
    cells = {kind: [row[s] for s in STEPS] for kind, row in summary.items()}
    return bench.save_bars(
        PLOT,
        f"Avro, schema cached: CPU per record, median of {args.runs} runs of {args.records:,} records",
        [("µs per record", ["serialise", "deserialise", "both"], cells, 1.0, "%.2f")],
        colors=COLORS,
        labels=LABELS,
        figsize=(8, 4.5),
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="ours,confluent,confluent-sync", help=", ".join(LABELS))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--records", type=int, default=200_000, help="records per step and process")
    parser.add_argument("--size", type=int, default=32, help="bytes of the record's one free-text field")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per client process")
    parser.add_argument("--machine", default="2 cores, 24 GiB")
    sys.exit(anyio.run(main, parser.parse_args()))
