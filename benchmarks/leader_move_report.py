"""What benchmarks/leader_move.py reports: per-run summaries aggregated over runs (median
and min-max), ratios of ours to every peer taken within each run, the consumer table, and
all of it as markdown.

Run on its own, it pools the runs of several result files of one scenario (each run's
ratios are still taken within that run):

    python benchmarks/leader_move_report.py A.json B.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any

from aiokafka_lead.bench.stats import STALL_MS, RecordTails, Summary, percentile

OURS = "aiokafka_lead hints on"
OURS_OFF = "aiokafka_lead hints off"
# connections_per_broker=2 (opt-in; "hints on" and "hints off" use the default, one
# connection per broker)
OURS_TWO = "aiokafka_lead hints on, 2 conn"
# max_in_flight_requests_per_connection=1: no pipelining
OURS_SERIAL = "aiokafka_lead hints on, 1 in flight"


def spread(values: list[float]) -> dict[str, float]:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return {"median": math.nan, "min": math.nan, "max": math.nan}
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def cell(d: dict[str, float], digits: int = 0) -> str:
    if math.isnan(d["median"]):
        return "n/a"
    return f"{d['median']:.{digits}f} ({d['min']:.{digits}f}-{d['max']:.{digits}f})"


def aggregate(per_run: list[list[Summary]]) -> list[dict[str, Any]]:
    """Median and spread (min-max) of each metric per client over the runs."""
    by_client: dict[str, list[Summary]] = {}
    for run in per_run:
        for s in run:
            by_client.setdefault(s.client, []).append(s)
    rows = []
    for client, items in by_client.items():
        row: dict[str, Any] = {"client": client, "runs": len(items), "failed": sum(s.failed for s in items)}
        for key in ("p50_ms", "p99_ms", "p999_ms", "max_ms", "blocked_total_ms", "blocked_max_ms", "cpu_s",
                    "cpu_measured_s"):
            row[key] = spread([getattr(s, key) for s in items])
        row["worst_stall_ms"] = spread([v for s in items for v in s.stall_ms])
        rows.append(row)
    return rows


def ratios(per_run: list[list[Summary]]) -> list[dict[str, Any]]:
    """ours / X at p99.9 and p99, computed within each run, then median over runs; for ours
    with hints on, and (when it ran) ours with hints on and two connections per broker."""
    out = []
    clients = [s.client for s in per_run[0]] if per_run else []
    pairs = [(OURS, peer) for peer in clients if peer != OURS]
    if OURS_TWO in clients:
        pairs += [(OURS_TWO, peer) for peer in clients if peer not in (OURS, OURS_TWO)]
    for ours, peer in pairs:
        row: dict[str, Any] = {"ours": ours, "vs": peer}
        for key in ("p999_ms", "p99_ms"):
            values = []
            for run in per_run:
                by = {s.client: s for s in run}
                if ours in by and peer in by and getattr(by[peer], key) > 0:
                    values.append(getattr(by[ours], key) / getattr(by[peer], key))
            row[key] = spread(values)
        out.append(row)
    return out


def producer_markdown(rows: list[dict[str, Any]], ratio_rows: list[dict[str, Any]]) -> str:
    lines = [
        "| client | p50 ms | p99 ms | p99.9 ms | max ms | worst per move ms | blocked in send() ms "
        "(total / longest) | client CPU s: whole / measured | failed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['client']} | {cell(r['p50_ms'], 1)} | {cell(r['p99_ms'])} | {cell(r['p999_ms'])} | "
            f"{cell(r['max_ms'])} | {cell(r['worst_stall_ms'])} | {r['blocked_total_ms']['median']:.0f} / "
            f"{r['blocked_max_ms']['median']:.0f} | {cell(r['cpu_s'], 1)} / {cell(r['cpu_measured_s'], 1)} | "
            f"{r['failed']} |"
        )
    lines += ["", "| ratio | p99.9 | p99 |", "|---|---|---|"]
    for r in ratio_rows:
        lines.append(f"| {r['ours']} / {r['vs']} | {cell(r['p999_ms'], 2)} | {cell(r['p99_ms'], 2)} |")
    return "\n".join(lines)


def consumer_summary(
    data: dict[str, Any], started: float, moves: list[tuple[float, float]]
) -> dict[str, Any]:
    """Latency from each record's scheduled time to its arrival at the consumer, and, per
    move, the time from the move's start until every partition delivered its first record
    scheduled after the move had finished (so written by the new leader)."""
    lat = sorted(
        (arrived - ms / 1000) * 1000
        for ms, arrived in zip(data["scheduled_ms"], data["arrived"], strict=True)
        if ms / 1000 >= started - 0.001  # timestamps are whole milliseconds
    )
    per_move = []
    for begin, end in moves:
        first: dict[int, float] = {}
        for p, ms, arrived in zip(data["partition"], data["scheduled_ms"], data["arrived"], strict=True):
            if ms / 1000 >= end and (p not in first or arrived < first[p]):
                first[p] = arrived
        per_move.append((max(first.values()) - begin) * 1000 if first else math.nan)
    return {
        "client": data["client"],
        "records": len(lat),
        "p50_ms": percentile(lat, 50),
        "p99_ms": percentile(lat, 99),
        "p999_ms": percentile(lat, 99.9),
        "max_ms": lat[-1] if lat else math.nan,
        "move_to_new_leader_ms": per_move,
    }


def consumer_markdown(per_run: list[list[dict[str, Any]]]) -> str:
    by_client: dict[str, list[dict[str, Any]]] = {}
    for run in per_run:
        for c in run:
            by_client.setdefault(c["client"], []).append(c)
    lines = [
        "| consumer | records/run | p50 ms | p99 ms | p99.9 ms | max ms | move -> first record from the "
        "new leader, all partitions, ms (median / max over moves) |",
        "|---|---|---|---|---|---|---|",
    ]
    for client, items in by_client.items():
        moves = [v for c in items for v in c["move_to_new_leader_ms"] if not math.isnan(v)]
        move_txt = f"{statistics.median(moves):.0f} / {max(moves):.0f}" if moves else "n/a"
        lines.append(
            f"| {client} | {statistics.median(c['records'] for c in items):.0f} | "
            + " | ".join(cell(spread([c[k] for c in items]), 1 if k == "p50_ms" else 0)
                         for k in ("p50_ms", "p99_ms", "p999_ms", "max_ms"))
            + f" | {move_txt} |"
        )  # fmt: skip
    return "\n".join(lines)


def scenario_markdown(
    rows: list[dict[str, Any]], ratio_rows: list[dict[str, Any]], consumer_runs: list[list[dict[str, Any]]]
) -> str:
    """The producer table, the ratios and (when consumers ran) the consumer table."""
    text = producer_markdown(rows, ratio_rows)
    if consumer_runs:
        text += (
            "\n\nConsumers (with __consumer_offsets present: confluent-kafka's consumer "
            "creates it):\n\n" + consumer_markdown(consumer_runs)
        )
    return text


def record_tails_markdown(tails: list[RecordTails]) -> str:
    """Every record of every run, then of the runs without a stall, per client."""
    stall_s = f"{STALL_MS / 1000:g} s"
    lines = [
        "Every acknowledged record of every run, pooled; then only the runs in which none "
        f"waited {stall_s} or more:",
        "",
        f"| client | p99 ms | p99.9 ms | runs with a record of {stall_s} or more "
        "| without those runs: p99 ms | p99.9 ms |",
        "|---|---|---|---|---|---|",
    ]
    for t in tails:
        lines.append(
            f"| {t.client} | {t.p99_ms:.0f} | {t.p999_ms:.0f} | {t.stalled_runs} of {t.runs} "
            f"| {t.calm_p99_ms:.0f} | {t.calm_p999_ms:.0f} |"
        )
    return "\n".join(lines)


def pooled_markdown(paths: list[Path]) -> str:
    """The producer and consumer tables over every run in ``paths`` (one scenario)."""
    results = [json.loads(p.read_text()) for p in paths]
    scenarios = {r["scenario"] for r in results}
    if len(scenarios) != 1:
        raise SystemExit(f"pool runs of one scenario, not {sorted(scenarios)}")
    per_run = [[Summary(**row) for row in run] for r in results for run in r["runs"]]
    consumers = [run for r in results for run in r["consumers"]]
    title = f"{len(per_run)} run(s) of {scenarios.pop()} from {', '.join(p.name for p in paths)}"
    return title + "\n\n" + scenario_markdown(aggregate(per_run), ratios(per_run), consumers)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Pool the runs of several leader_move result files.")
    parser.add_argument("results", nargs="+", type=Path, help="leader_move_<scenario>.json files")
    print(pooled_markdown(parser.parse_args().results))
