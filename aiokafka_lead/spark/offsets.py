"""Per-partition offsets as Spark sees them: JSON in a fixed sorted order, and ranges.

Spark compares and stores offsets as JSON strings, so the same offsets must always encode
to the same text: topics sorted by name, partitions by number.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from aiokafka_lead.metadata.model import PartitionValue
from aiokafka_lead.spark.options import EARLIEST, LATEST, Bound, SparkOptionError
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


def check_batch_bounds(starting: Bound, ending: Bound) -> None:
    """A batch query's bounds as Spark's connector checks them: no latest start, no earliest end."""
    if not starting.is_timestamp:
        _refuse(parse_spec(starting.offsets, "startingOffsets"), LATEST, "starting offset", "startingOffsets",
                "latest")  # fmt: skip
    if not ending.is_timestamp:
        _refuse(parse_spec(ending.offsets, "endingOffsets"), EARLIEST, "ending offset", "ending offset",
                "earliest")  # fmt: skip


def _refuse(spec: Offsets | int, bad: int, whole: str, each: str, word: str) -> None:
    if spec == bad:
        raise SparkOptionError(f"{whole} can't be {word} for batch queries on Kafka")
    for tp, offset in spec.items() if isinstance(spec, dict) else ():
        if offset == bad:
            raise SparkOptionError(
                f"{each} for {tp.topic}-{tp.partition} can't be {word} for batch queries on Kafka"
            )


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


def split_ranges(
    ranges: list[OffsetRange], min_partitions: int | None, max_records: int | None
) -> list[OffsetRange]:
    """Spark's connector's task planning: with ``minPartitions`` above the number of ranges,
    large ranges split in proportion to their share of all offsets (a range whose share
    rounds to one task stays whole); then any range above ``maxRecordsPerPartition`` offsets
    splits into equal parts of at most that many."""
    ranges = [r for r in ranges if r.end > r.start]
    if min_partitions is not None and len(ranges) < min_partitions:
        total = sum(r.end - r.start for r in ranges)
        whole = [r for r in ranges if _share(r.end - r.start, total, min_partitions) == 1]
        split_total = total - sum(r.end - r.start for r in whole)
        split_tasks = max(min_partitions - len(whole), 1)
        ranges = [
            part
            for r in ranges
            for part in _parts(r, 1 if r in whole else _share(r.end - r.start, split_total, split_tasks))
        ]
    if max_records is not None:
        ranges = [part for r in ranges for part in _parts(r, -(-(r.end - r.start) // max_records))]
    return ranges


def _share(size: int, total: int, tasks: int) -> int:
    """Tasks for ``size`` of ``total`` offsets over ``tasks`` tasks, rounded half up, at least one."""
    return max(int(size / total * tasks + 0.5), 1)


def _parts(r: OffsetRange, count: int) -> list[OffsetRange]:
    """``r`` in ``count`` consecutive parts, the remainder of the division in the last ones."""
    out: list[OffsetRange] = []
    start, left = r.start, r.end - r.start
    for i in range(count):
        size = left // (count - i)
        left -= size
        if size > 0:
            out.append(OffsetRange(r.topic, r.partition, start, start + size))
        start += size
    return out
