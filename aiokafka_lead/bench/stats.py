"""Latency samples of a produce run and what the leader-move comparison reports."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

STALL_WINDOW_S = 5.0  # records sent this long after a move count towards its stall


@dataclass(slots=True)
class Samples:
    """One client's run: wall-clock send times and latencies (ms; None = not delivered)."""

    client: str
    sent_at: list[float] = field(default_factory=list)
    latency_ms: list[float | None] = field(default_factory=list)
    moves: list[tuple[float, float]] = field(default_factory=list)  # wall-clock (start, end)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Samples:
        return cls(
            data["client"],
            data["sent_at"],
            data["latency_ms"],
            [tuple(m) for m in data.get("moves", [])],
            data.get("extra", {}),
        )


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (q in 0..100)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
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
    stall_ms: list[float]  # per move: worst latency of records sent within STALL_WINDOW_S after it began
    over_100ms: int

    def row(self) -> dict[str, Any]:
        return asdict(self)


def summarize(samples: Samples) -> Summary:
    ok = sorted(v for v in samples.latency_ms if v is not None)
    failed = sum(1 for v in samples.latency_ms if v is None)
    stalls = []
    for start, _end in samples.moves:
        window = [
            lat
            for sent, lat in zip(samples.sent_at, samples.latency_ms, strict=True)
            if lat is not None and start <= sent < start + STALL_WINDOW_S
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
    )
