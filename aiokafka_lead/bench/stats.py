"""Latency samples of a produce run and what the leader-move comparison reports.

Every client is measured the same way, free of coordinated omission: record ``i`` of a run
is *scheduled* at ``start + i / rate``; its latency runs from that scheduled time to its
acknowledgement, so a client whose ``send()`` blocks during a stall is charged for the
records it could not even hand over. The time each ``send()`` call itself blocked is kept
beside it (``blocked_ms``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

STALL_WINDOW_S = 5.0  # records scheduled this long after a move count towards its stall


@dataclass(slots=True)
class Samples:
    """One client's run: wall-clock scheduled times, latencies from them (ms; None = not
    delivered) and the time each send() call blocked (ms)."""

    client: str
    scheduled_at: list[float] = field(default_factory=list)
    latency_ms: list[float | None] = field(default_factory=list)
    blocked_ms: list[float] = field(default_factory=list)
    moves: list[tuple[float, float]] = field(default_factory=list)  # wall-clock (start, end)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The fields as they are: ``dataclasses.asdict`` would deep-copy every sample, CPU
        the benchmarks would charge to the client whose samples they are."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Samples:
        return cls(
            data["client"],
            data["scheduled_at"],
            data["latency_ms"],
            data.get("blocked_ms", []),
            [tuple(m) for m in data.get("moves", [])],
            data.get("extra", {}),
        )


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (q in 0..100)."""
    if not sorted_values:
        return math.nan
    # rounded first: 99.9 / 100 * 1000 is 999.0000000000001 in floating point, not rank 999
    rank = max(1, math.ceil(round(q / 100 * len(sorted_values), 9)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


@dataclass(slots=True)
class Summary:
    client: str
    records: int
    failed: int
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    stall_ms: list[float]  # per move: worst latency of records scheduled within STALL_WINDOW_S after it
    over_100ms: int
    blocked_total_ms: float  # time spent inside send() over the run
    blocked_max_ms: float  # the longest single send() call
    cpu_s: float  # CPU time of the client's process over the whole run (warm-up included), if known
    # its CPU time from the end of its warm-up to its exit (the measured production, its
    # flush and the writing of its samples; not its start, imports, connecting or warm-up)
    cpu_measured_s: float = math.nan

    def row(self) -> dict[str, Any]:
        return asdict(self)


def summarize(samples: Samples) -> Summary:
    ok = sorted(v for v in samples.latency_ms if v is not None)
    failed = sum(1 for v in samples.latency_ms if v is None)
    stalls = []
    for start, _end in samples.moves:
        window = [
            lat
            for at, lat in zip(samples.scheduled_at, samples.latency_ms, strict=True)
            if lat is not None and start <= at < start + STALL_WINDOW_S
        ]
        stalls.append(max(window, default=math.nan))
    return Summary(
        client=samples.client,
        records=len(samples.latency_ms),
        failed=failed,
        p50_ms=percentile(ok, 50),
        p99_ms=percentile(ok, 99),
        p999_ms=percentile(ok, 99.9),
        max_ms=ok[-1] if ok else math.nan,
        stall_ms=stalls,
        over_100ms=sum(1 for v in ok if v > 100),
        blocked_total_ms=sum(samples.blocked_ms),
        blocked_max_ms=max(samples.blocked_ms, default=0.0),
        cpu_s=float(samples.extra.get("cpu_s", math.nan)),
        cpu_measured_s=float(samples.extra.get("cpu_measured_s", math.nan)),
    )


#: a run in which some record waited this long had a stall (record_tails() sets it apart)
STALL_MS = 1000.0


@dataclass(slots=True)
class RecordTails:
    """One client's tail over every acknowledged record of every run, not a median of runs:
    ten runs of 40,000 records put 4,000 records above the pooled p99, where each run's own
    p99 rests on 400 and moves by several percent between runs."""

    client: str
    runs: int
    p99_ms: float
    p999_ms: float
    stalled_runs: int  # runs with a record at or over STALL_MS
    calm_p99_ms: float  # over the other runs only
    calm_p999_ms: float

    def row(self) -> dict[str, Any]:
        return asdict(self)


def record_tails(runs: Sequence[Samples]) -> list[RecordTails]:
    """Per client (in first-seen order) the pooled tails of ``runs``, one Samples per client
    and run."""
    by_client: dict[str, list[list[float]]] = {}
    for samples in runs:
        by_client.setdefault(samples.client, []).append([v for v in samples.latency_ms if v is not None])
    tails = []
    for client, latencies in by_client.items():
        calm_runs = [run for run in latencies if max(run, default=0.0) < STALL_MS]
        every = sorted(v for run in latencies for v in run)
        calm = every if len(calm_runs) == len(latencies) else sorted(v for run in calm_runs for v in run)
        tails.append(
            RecordTails(
                client=client,
                runs=len(latencies),
                p99_ms=percentile(every, 99),
                p999_ms=percentile(every, 99.9),
                stalled_runs=len(latencies) - len(calm_runs),
                calm_p99_ms=percentile(calm, 99),
                calm_p999_ms=percentile(calm, 99.9),
            )
        )
    return tails
