"""Legacy message sets (magic v0/v1), decode only; fixtures from a tiny test-only encoder."""

from __future__ import annotations

import random
import struct
import zlib

import lz4.frame
import pytest

from aiokafka_lead.errors import CorruptRecordError, DecodeError
from aiokafka_lead.records import (
    CompressionType,
    LegacyRecordBatch,
    MemoryRecords,
    RecordBatchBuilder,
    TimestampType,
    compress,
)
from aiokafka_lead.records.compression import _xxh32


def broken_kafka3160_frame(data: bytes) -> bytes:
    """An lz4 frame whose header checksum covers the magic too (magic v0 producers)."""
    frame = bytearray(lz4.frame.compress(data, content_checksum=False))
    desc_end = 6 + (8 if frame[4] & 0x08 else 0) + (4 if frame[4] & 0x01 else 0)
    frame[desc_end] = (_xxh32(bytes(frame[:desc_end])) >> 8) & 0xFF
    return bytes(frame)


def _bytes(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def message(
    offset: int,
    key: bytes | None,
    value: bytes | None,
    *,
    magic: int = 1,
    attributes: int = 0,
    timestamp: int = 0,
) -> bytes:
    """Encode one legacy message (test fixtures only: the client writes v2 only)."""
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += _bytes(key) + _bytes(value)
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, 4 + len(body), crc) + body


def wrapper(
    offset: int,
    inner: bytes,
    codec: int,
    *,
    magic: int = 1,
    timestamp: int = 0,
    log_append: bool = False,
    payload: bytes | None = None,
) -> bytes:
    value = payload if payload is not None else compress(codec, inner)
    attributes = codec | (0x08 if log_append else 0)
    return message(offset, None, value, magic=magic, attributes=attributes, timestamp=timestamp)


@pytest.mark.parametrize("magic", [0, 1])
def test_plain_messages(magic: int) -> None:
    data = (
        message(10, b"k", b"v", magic=magic, timestamp=111)
        + message(11, None, None, magic=magic, timestamp=112)
        + message(12, b"", b"", magic=magic, timestamp=113)
    )
    batches = list(MemoryRecords(data, topic="old", partition=0))
    assert len(batches) == 3
    for batch in batches:
        assert isinstance(batch, LegacyRecordBatch)
        batch.validate_crc()
        assert batch.magic == magic
        assert batch.base_offset == batch.last_offset
        assert batch.record_count == 1
        assert batch.producer_id == -1 and not batch.is_control and not batch.is_transactional
    records = [r for b in batches for r in b.records()]
    assert [(r.offset, r.key, r.value, tuple(r.headers)) for r in records] == [
        (10, b"k", b"v", ()),
        (11, None, None, ()),
        (12, b"", b"", ()),
    ]
    if magic == 1:
        assert [r.timestamp for r in records] == [111, 112, 113]
        assert batches[0].timestamp_type == TimestampType.CREATE_TIME
    else:
        assert [r.timestamp for r in records] == [-1, -1, -1]
        assert batches[0].timestamp_type == TimestampType.NO_TIMESTAMP_TYPE


@pytest.mark.parametrize("codec", [1, 2, 3], ids=["gzip", "snappy", "lz4"])
def test_v1_wrapper_relative_offsets(codec: int) -> None:
    inner = b"".join(message(i, b"k%d" % i, b"v%d" % i, timestamp=100 + i) for i in range(3))
    data = wrapper(52, inner, codec, timestamp=102)  # inner 0..2, wrapper = absolute last
    (batch,) = MemoryRecords(data)
    batch.validate_crc()
    assert batch.compression_type == codec
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (50, 52, 3)
    assert batch.max_timestamp == 102
    records = batch.records()
    assert [r.offset for r in records] == [50, 51, 52]
    assert [r.timestamp for r in records] == [100, 101, 102]
    assert [r.value for r in records] == [b"v0", b"v1", b"v2"]


def test_v1_wrapper_log_append_time() -> None:
    inner = b"".join(message(i, None, b"x", timestamp=5) for i in range(2))
    data = wrapper(1, inner, CompressionType.GZIP, timestamp=999, log_append=True)
    (batch,) = MemoryRecords(data)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records()] == [999, 999]


@pytest.mark.parametrize("codec", [1, 2], ids=["gzip", "snappy"])
def test_v0_wrapper_absolute_offsets(codec: int) -> None:
    inner = b"".join(message(i, None, b"v%d" % i, magic=0) for i in (7, 8, 9))
    (batch,) = MemoryRecords(wrapper(9, inner, codec, magic=0))
    assert [r.offset for r in batch.records()] == [7, 8, 9]
    assert [r.timestamp for r in batch.records()] == [-1, -1, -1]


def test_v0_lz4_wrapper_with_kafka3160_header() -> None:
    inner = b"".join(message(i, None, b"v%d" % i, magic=0) for i in (0, 1))
    payload = broken_kafka3160_frame(inner)
    (batch,) = MemoryRecords(wrapper(1, inner, CompressionType.LZ4, magic=0, payload=payload))
    assert [r.value for r in batch.records()] == [b"v0", b"v1"]


def test_mixed_legacy_and_v2() -> None:
    builder = RecordBatchBuilder(base_offset=3)
    builder.append(0, None, b"new")
    data = message(2, None, b"old") + builder.build()
    assert [r.value for b in MemoryRecords(data) for r in b.records()] == [b"old", b"new"]


def test_legacy_crc_mismatch_names_location() -> None:
    buf = bytearray(message(40, b"k", b"value"))
    buf[-1] ^= 0xFF
    (batch,) = MemoryRecords(bytes(buf), topic="legacy", partition=4)
    with pytest.raises(CorruptRecordError) as info:
        batch.validate_crc()
    assert (info.value.topic, info.value.partition, info.value.offset) == ("legacy", 4, 40)


def test_legacy_truncation_and_flips() -> None:
    inner = b"".join(message(i, b"k", b"v" * i, timestamp=i) for i in range(4))
    data = message(0, b"a", b"b") + wrapper(5, inner, CompressionType.GZIP, timestamp=3)
    first_end = len(message(0, b"a", b"b"))
    for cut in range(len(data) + 1):
        batches = list(MemoryRecords(data[:cut]))
        assert len(batches) == (cut >= first_end) + (cut == len(data))
        for b in batches:
            b.records()
    rnd = random.Random(0)
    for _ in range(1500):
        buf = bytearray(data)
        buf[rnd.randrange(len(buf))] ^= 1 << rnd.randrange(8)
        try:
            for b in MemoryRecords(bytes(buf)):
                b.validate_crc()
                b.records()
        except (DecodeError, CorruptRecordError):
            pass
        try:  # unchecked as well: garbage must still only raise the codec's errors
            for b in MemoryRecords(bytes(buf)):
                b.records()
                _ = (b.base_offset, b.record_count)
        except (DecodeError, CorruptRecordError):
            pass


@pytest.mark.parametrize(
    "data",
    [
        wrapper(0, message(0, None, b"x"), 4),  # zstd cannot appear in a legacy wrapper
        message(0, None, None, attributes=1),  # wrapper without a value
        wrapper(0, b"", 1),  # empty inner set
        wrapper(0, wrapper(0, message(0, None, b"x"), 1), 1),  # nested compression
        wrapper(0, message(0, None, b"x")[:-1], 1),  # truncated inner message
    ],
)
def test_malformed_wrappers(data: bytes) -> None:
    (batch,) = MemoryRecords(data)
    with pytest.raises(DecodeError):
        batch.records()


def test_bad_legacy_sizes() -> None:
    msg = bytearray(message(0, b"k", b"v"))
    struct.pack_into(">i", msg, 8, 3)  # below the minimum v1 message size
    with pytest.raises(DecodeError):
        list(MemoryRecords(bytes(msg)))
    msg = bytearray(message(0, b"k", b"v"))
    struct.pack_into(">i", msg, len(msg) - 5, 100)  # value longer than the message
    with pytest.raises(DecodeError):
        list(MemoryRecords(bytes(msg)))
