"""Two modes compared over interleaved rounds, and a plain verdict on the difference.

One production per mode is at the mercy of order (the first production after a warm-up is
often the slowest) and of one bad leader move. The demo therefore alternates the two modes
over several short rounds in ABBA order (on/off, off/on, on/off, ...), so each mode runs
first equally often, and compares them pair by pair: a difference counts only when every
pair agrees on its direction; otherwise it is reported as inside the noise.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def abba_order(pairs: int, modes: tuple[str, str]) -> list[str]:
    """The run order of ``pairs`` rounds of two modes, alternating which one goes first."""
    first, second = modes
    order: list[str] = []
    for i in range(pairs):
        order += [first, second] if i % 2 == 0 else [second, first]
    return order


@dataclass(frozen=True, slots=True)
class Spread:
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(statistics.median(values), min(values), max(values))

    def __str__(self) -> str:
        return f"{self.median:.0f} ms ({self.low:.0f}-{self.high:.0f})"


@dataclass(frozen=True, slots=True)
class Comparison:
    """``a`` against ``b`` (lower is better): per-mode spread and per-pair ratios a/b."""

    a: Spread
    b: Spread
    ratios: tuple[float, ...]

    @property
    def clear(self) -> bool:
        """Every pair agrees on which mode is faster (and there are at least two pairs)."""
        return len(self.ratios) >= 2 and (all(r < 1 for r in self.ratios) or all(r > 1 for r in self.ratios))

    def verdict(self, a_name: str, b_name: str, metric: str) -> str:
        ratio = statistics.median(self.ratios)
        low, high = min(self.ratios), max(self.ratios)
        span = f"per-pair ratio {a_name}/{b_name} median {ratio:.2f} ({low:.2f}-{high:.2f})"
        rounds = len(self.ratios)
        head = f"{metric}: {a_name} {self.a} vs {b_name} {self.b} (median, min-max over {rounds} rounds each)"
        if self.clear:
            faster = a_name if ratio < 1 else b_name
            return f"{head}\n{span}: {faster} is faster in every pair"
        if len(self.ratios) < 2:
            return f"{head}\n{span}: one pair cannot tell a difference from noise; run more rounds"
        return f"{head}\n{span}: the pairs disagree, so the difference is inside the noise"


def compare(a: Sequence[float], b: Sequence[float]) -> Comparison:
    """Compare per-round values of two modes; round ``i`` of ``a`` is paired with round ``i`` of ``b``."""
    if len(a) != len(b) or not a:
        raise ValueError(f"need the same, non-zero number of rounds per mode (got {len(a)} and {len(b)})")
    ratios = tuple(x / y if y > 0 else float("inf") for x, y in zip(a, b, strict=True))
    return Comparison(Spread.of(a), Spread.of(b), ratios)
