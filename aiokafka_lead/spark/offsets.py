"""Per-partition offsets as Spark sees them: JSON in a fixed sorted order, and ranges.

Spark compares and stores offsets as JSON strings, so the same offsets must always encode
to the same text: topics sorted by name, partitions by number.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from aiokafka_lead.metadata.model import PartitionValue
from aiokafka_lead.spark.options import EARLIEST, LATEST, SparkOptionError
from aiokafka_lead.structs import TopicPartition

Offsets = dict[TopicPartition, int]


def to_json_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def from_json_dict(data: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {TopicPartition(t, int(p)): int(o) for t, parts in data.items() for p, o in parts.items()}


def parse_spec(spec: str, name: str) -> Offsets | int:
    """``"earliest"`` / ``"latest"`` -> EARLIEST / LATEST; JSON -> per-partition offsets (-2/-1 allowed)."""
    lowered = spec.strip().lower()
    if lowered == "earliest":
        return EARLIEST
    if lowered == "latest":
        return LATEST
    try:
        return from_json_dict(json.loads(spec))
    except (ValueError, TypeError, AttributeError) as exc:
        raise SparkOptionError(
            f'{name} must be "earliest", "latest" or JSON like {{"t": {{"0": 5}}}}: {exc}'
        ) from exc


@dataclass(frozen=True, slots=True)
class OffsetRange(PartitionValue):
    """Offsets [start, end) of one partition: what one Spark task reads."""

    start: int
    end: int


def plan_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """One non-empty range per partition, in sorted order (new partitions start at their start)."""
    return [
        OffsetRange(tp.topic, tp.partition, start[tp], end[tp])
        for tp in sorted(end)
        if tp in start and end[tp] > start[tp]
    ]


def cap_rows(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_rows: int
) -> Offsets:
    """Advance at most ``max_rows`` offsets in all, shared in proportion to each partition's backlog."""
    backlog = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    capped: Offsets = {}
    for tp in sorted(latest):
        begin = start.get(tp, latest[tp])
        capped[tp] = begin + (backlog[tp] * max_rows) // total
    return capped
