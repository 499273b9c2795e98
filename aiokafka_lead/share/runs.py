"""Offsets in runs: a share consumer's bookkeeping costs per run of consecutive offsets, not
per record (no I/O).

A run is ``(first, last, type)``: the offsets ``first..last`` with one acknowledgement type
(``records.GAP`` or an ``AcknowledgeType``). A partition's pending acknowledgements are runs
in the order they were made, a later one winning where two overlap; :func:`settle` turns
them into the sorted, disjoint runs an :class:`Acks` holds, from which the request's
AcknowledgementBatches come.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: (first offset, last offset, acknowledgement type)
Run = tuple[int, int, int]
#: (first offset, last offset)
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One AcknowledgementBatch: consecutive offsets, one type for all or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


class Acks:
    """One partition's acknowledgements: sorted, disjoint runs."""

    __slots__ = ("runs",)

    def __init__(self, runs: list[Run]) -> None:
        self.runs = runs

    @classmethod
    def of(cls, by_offset: dict[int, int]) -> Acks:
        """From ``{offset: type}``."""
        return cls(settle([(o, o, t) for o, t in by_offset.items()]))

    def by_offset(self) -> dict[int, int]:
        return {o: t for first, last, t in self.runs for o in range(first, last + 1)}

    def offsets(self) -> set[int]:
        return {o for first, last, _ in self.runs for o in range(first, last + 1)}

    def count(self) -> int:
        return sum(last - first + 1 for first, last, _ in self.runs)

    def has(self, kind: int) -> bool:
        return any(t == kind for _, _, t in self.runs)

    def offsets_of(self, kind: int) -> list[int]:
        return [o for first, last, t in self.runs if t == kind for o in range(first, last + 1)]

    def batches(self) -> list[AckBatch]:
        """AcknowledgementBatches: runs of consecutive offsets joined, one type when they
        share it, else one type per offset."""
        out: list[AckBatch] = []
        group: list[Run] = []
        for run in self.runs:
            if group and run[0] != group[-1][1] + 1:
                out.append(_batch(group))
                group = []
            group.append(run)
        if group:
            out.append(_batch(group))
        return out

    def __repr__(self) -> str:
        return f"Acks({self.runs})"


def _batch(group: list[Run]) -> AckBatch:
    first, last = group[0][0], group[-1][1]
    if len({t for _, _, t in group}) == 1:
        return AckBatch(first, last, (group[0][2],))
    return AckBatch(first, last, tuple(t for f, la, t in group for _ in range(f, la + 1)))


def settle(runs: Sequence[Run]) -> list[Run]:
    """Runs in the order they were made (a later one wins where two overlap) as sorted,
    disjoint runs, neighbours of one type joined. Per run unless two overlap (an offset
    acknowledged again before it was sent), which costs per offset."""
    ordered = sorted(runs, key=lambda r: r[0])
    if any(a[1] >= b[0] for a, b in itertools.pairwise(ordered)):
        by_offset: dict[int, int] = {}
        for first, last, kind in runs:
            by_offset.update(dict.fromkeys(range(first, last + 1), kind))
        ordered = [(o, o, t) for o, t in sorted(by_offset.items())]
    out: list[Run] = []
    for first, last, kind in ordered:
        if out and out[-1][2] == kind and out[-1][1] + 1 == first:
            out[-1] = (out[-1][0], last, kind)
        else:
            out.append((first, last, kind))
    return out


def spans(offsets: Sequence[int]) -> list[Span]:
    """The runs of consecutive offsets in an ascending sequence: one step when it is dense."""
    if not offsets:
        return []
    if offsets[-1] - offsets[0] + 1 == len(offsets):
        return [(offsets[0], offsets[-1])]
    out: list[Span] = []
    start = previous = offsets[0]
    for offset in offsets[1:]:
        if offset != previous + 1:
            out.append((start, previous))
            start = offset
        previous = offset
    out.append((start, previous))
    return out


def without(spans_: Iterable[Span], excluded: Sequence[int]) -> list[Span]:
    """``spans_`` with the (sorted) ``excluded`` offsets cut out."""
    out: list[Span] = []
    for first, last in spans_:
        lo, hi = bisect.bisect_left(excluded, first), bisect.bisect_right(excluded, last)
        start = first
        for cut in excluded[lo:hi]:
            if cut > start:
                out.append((start, cut - 1))
            start = cut + 1
        if start <= last:
            out.append((start, last))
    return out


def gaps(ranges: Sequence[tuple[int, int, int]], covered: Sequence[Span]) -> list[Span]:
    """The offsets of the acquired ``ranges`` (sorted, disjoint) that no ``covered`` span
    (sorted, disjoint) holds."""
    out: list[Span] = []
    i = 0
    for first, last, _ in ranges:
        while i < len(covered) and covered[i][1] < first:
            i += 1
        j = i
        start = first
        while j < len(covered) and covered[j][0] <= last:
            if covered[j][0] > start:
                out.append((start, covered[j][0] - 1))
            start = max(start, covered[j][1] + 1)
            j += 1
        if start <= last:
            out.append((start, last))
    return out


__all__ = ["AckBatch", "Acks", "Run", "Span", "gaps", "settle", "spans", "without"]
