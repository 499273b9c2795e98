"""Record offsets must increase within a batch: a batch whose offset deltas run 2, 1, 0 (or
repeat, or start below the base offset) is a CorruptRecordError naming the partition, in
both decoders (this directory's conftest runs every test with each)."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from aiokafka_lead.errors import CorruptRecordError
from aiokafka_lead.records import MemoryRecords
from aiokafka_lead.records.varint import varint_bytes


def record(offset_delta: int, value: bytes) -> bytes:
    body = (
        b"\x00"  # attributes
        + varint_bytes(0)  # timestamp delta
        + varint_bytes(offset_delta)
        + varint_bytes(-1)  # null key
        + varint_bytes(len(value))
        + value
        + varint_bytes(0)  # no headers
    )
    return varint_bytes(len(body)) + body


def batch_with_deltas(deltas: list[int], base_offset: int = 100) -> bytes:
    """A v2 batch (correct CRC) whose records carry these offset deltas."""
    records = b"".join(record(d, b"v%d" % i) for i, d in enumerate(deltas))
    count = len(deltas)
    body = struct.pack(">hiqqqhii", 0, max(deltas), 0, 0, -1, -1, -1, count) + records
    return struct.pack(">qiibI", base_offset, 9 + len(body), -1, 2, crc32c(body)) + body


@pytest.mark.parametrize("deltas", [[2, 1, 0], [0, 0], [0, 1, 1], [-1, 0], [0, 2, 1]])
def test_offsets_that_do_not_increase_are_refused(deltas: list[int]) -> None:
    (batch,) = MemoryRecords(batch_with_deltas(deltas), topic="orders", partition=3)
    batch.validate_crc()  # the bytes are intact: the content is what is wrong
    with pytest.raises(CorruptRecordError, match="offsets in a batch must increase") as info:
        batch.records()
    assert (info.value.topic, info.value.partition, info.value.offset) == ("orders", 3, 100)
    assert "topic=orders, partition=3" in str(info.value)


def test_gaps_left_by_compaction_are_fine() -> None:
    (batch,) = MemoryRecords(batch_with_deltas([0, 2, 7]))
    assert [r.offset for r in batch.records()] == [100, 102, 107]


def test_both_decoders_name_the_same_deltas() -> None:
    (batch,) = MemoryRecords(batch_with_deltas([0, 5, 3]), topic="t", partition=0)
    with pytest.raises(CorruptRecordError, match="offset delta 3 follows 5"):
        batch.records()
