"""One partition of a ShareFetch answer as records, batch by batch (no I/O).

The records bytes decode as the consumer's do (``records.MemoryRecords``, the batches'
``records()``); the C extension's ``build_share_records`` then builds the
``ShareConsumerRecord``s of a batch that lie in the acquired ranges, with their delivery
count and lock deadline (``py_build_share_records`` is its pure-Python twin and reference).
Which acquired offsets hold no record (gaps: control records, compacted offsets) is worked
out per batch, from each batch's first and last record.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from aiokafka_lead.records import MemoryRecords, native
from aiokafka_lead.records.native import CONSUMER_RECORD_FIELDS, BuildShareRecords
from aiokafka_lead.records.record import Record
from aiokafka_lead.share.acks import Chunk, chunk_spans
from aiokafka_lead.share.records import ShareConsumerRecord
from aiokafka_lead.share.runs import Span, gaps
from aiokafka_lead.structs import TopicPartition

#: far more offsets than a broker acquires for one partition in one answer (Kafka bounds a
#: partition's locks by group.share.partition.max.record.locks, 2000 by default)
MAX_ACQUIRED = 100_000

#: ShareConsumerRecord's fields in the order the C builder fills them
SHARE_RECORD_FIELDS = (*CONSUMER_RECORD_FIELDS, "delivery_count", "lock_deadline")

Deserializer = Any
#: (first offset, last offset, delivery count), as AcquiredRecords
Range = tuple[int, int, int]


def _bind() -> BuildShareRecords | None:
    if native.build_share_records is None or native.configure_share is None:
        return None
    names = tuple(f.name for f in fields(ShareConsumerRecord))
    if names != SHARE_RECORD_FIELDS:  # the C side fills slots in this order
        raise RuntimeError(f"ShareConsumerRecord fields changed: {names}; update share/acquire.py")
    native.configure_share(ShareConsumerRecord, SHARE_RECORD_FIELDS)
    return native.build_share_records


#: the C builder, bound to ShareConsumerRecord (None without the extension)
c_build_share_records = _bind()


def py_build_share_records(  # noqa: PLR0917 - the C twin's positional signature
    rows: list[Record],
    topic: str,
    partition: int,
    timestamp_type: int,
    leader_epoch: int,
    ranges: list[Range],
    lock_deadline: float,
    floor: int,
) -> list[ShareConsumerRecord[Any, Any]]:
    """The records of ``rows`` inside the sorted, disjoint ``ranges`` at or above ``floor``,
    in strictly ascending offsets (a repeated or lower offset is skipped)."""
    out: list[ShareConsumerRecord[Any, Any]] = []
    j = 0
    items: list[Any] = rows  # headers: (str, bytes | None) pairs, as aiokafka's
    for offset, timestamp, key, value, headers in items:
        if j == len(ranges):
            break
        if offset < floor:
            continue
        while j < len(ranges) and ranges[j][1] < offset:
            j += 1
        if j == len(ranges) or offset < ranges[j][0]:
            continue
        out.append(
            ShareConsumerRecord(
                topic,
                partition,
                offset,
                timestamp,
                timestamp_type,
                key,
                value,
                None,
                -1 if key is None else len(key),
                -1 if value is None else len(value),
                tuple(headers),
                leader_epoch,
                ranges[j][2],
                lock_deadline,
            )
        )
        floor = offset + 1
    return out


def check_ranges(ranges: list[Range]) -> str | None:
    """What is wrong with a partition's (sorted) AcquiredRecords, if anything."""
    span = 0
    previous_last = -1
    for first, last, count in ranges:
        if first < 0 or last < first:
            return f"acquired range {first}-{last} is empty or negative"
        if first <= previous_last:
            return f"acquired ranges overlap at offset {first}"
        if count < 1:
            return f"delivery count {count} for offsets {first}-{last}"
        span += last - first + 1
        previous_last = last
    if span > MAX_ACQUIRED:
        return f"{span} offsets acquired at once (more than {MAX_ACQUIRED})"
    return None


@dataclass(slots=True)
class Acquired:
    """A partition's answer: its records per batch, and the acquired offsets without one."""

    chunks: list[Chunk]
    gaps: list[Span]
    count: int


def acquire(
    tp: TopicPartition,
    data: bytes | memoryview | None,
    ranges: list[Range],
    lock_deadline: float,
    deserializers: tuple[Deserializer, Deserializer],
) -> Acquired:
    """The records of ``data`` inside the acquired ``ranges`` (sorted, checked)."""
    kd, vd = deserializers
    build = c_build_share_records if kd is None and vd is None else None
    build = build or py_build_share_records
    chunks: list[Chunk] = []
    covered: list[Span] = []
    count = 0
    floor, end = ranges[0][0], ranges[-1][1]
    for batch in MemoryRecords(data or b"", topic=tp.topic, partition=tp.partition):
        if batch.is_control or batch.last_offset < floor or batch.base_offset > end:
            continue
        epoch = getattr(batch, "partition_leader_epoch", -1)
        chunk = build(
            batch.records(),
            tp.topic,
            tp.partition,
            int(batch.timestamp_type),
            epoch,
            ranges,
            lock_deadline,
            floor,
        )
        if not chunk:
            continue
        if kd is not None or vd is not None:
            for record in chunk:
                if kd is not None and record.key is not None:
                    record.key = kd(record.key)
                if vd is not None and record.value is not None:
                    record.value = vd(record.value)
        floor = chunk[-1].offset + 1
        covered += chunk_spans(chunk)
        chunks.append(chunk)
        count += len(chunk)
    return Acquired(chunks, gaps(ranges, covered), count)


__all__ = ["MAX_ACQUIRED", "Acquired", "acquire", "check_ranges", "py_build_share_records"]
