"""Error contract: truncated or corrupted input raises only DecodeError/CorruptRecordError."""

from __future__ import annotations

import contextlib
import random
import struct

import pytest
from crc32c import crc32c

from aiokafka_lead.errors import CorruptRecordError, DecodeError
from aiokafka_lead.records import (
    CompressionType,
    MemoryRecords,
    RecordBatch,
    RecordBatchBuilder,
)

ALLOWED = (DecodeError, CorruptRecordError)


def sample_batches(codec: int = 0) -> bytes:
    out = []
    for n in (3, 1, 2):
        builder = RecordBatchBuilder(codec, is_transactional=n == 2)
        for i in range(n):
            builder.append(
                1000 + i,
                b"key%d" % i if i else None,
                b"value" * i,
                [("h", b"x"), ("n", None)] if i == 1 else (),
            )
        out.append(builder.build(7, 1, 0))
    return b"".join(out)


def consume(data: bytes, *, check_crc: bool = True) -> int:
    n = 0
    for batch in MemoryRecords(data, topic="t", partition=3):
        if check_crc:
            batch.validate_crc()
        n += len(batch.records())
        _ = batch.control_type
    return n


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_every_prefix_yields_fewer_complete_batches(codec: int) -> None:
    data = sample_batches(codec)
    full = list(MemoryRecords(data))
    ends = []
    pos = 0
    for batch in full:
        pos += batch.size_in_bytes()
        ends.append(pos)
    for cut in range(len(data) + 1):
        batches = list(MemoryRecords(data[:cut]))
        assert len(batches) == sum(1 for end in ends if end <= cut)
        for batch in batches:
            batch.validate_crc()
            batch.records()


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_random_bit_flips(codec: int) -> None:
    data = sample_batches(codec)
    rnd = random.Random(codec)
    for _ in range(800):
        buf = bytearray(data)
        for _ in range(rnd.choice((1, 1, 2, 8))):
            buf[rnd.randrange(len(buf))] ^= 1 << rnd.randrange(8)
        with contextlib.suppress(*ALLOWED):
            consume(bytes(buf))


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_bit_flips_without_crc_check_still_honour_contract(codec: int) -> None:
    """Even unchecked, garbage in records or compressed payloads must not leak other errors."""
    data = sample_batches(codec)
    rnd = random.Random(1)
    for _ in range(600):
        buf = bytearray(data)
        buf[rnd.randrange(61, len(buf))] = rnd.randrange(256)
        with contextlib.suppress(*ALLOWED):
            consume(bytes(buf), check_crc=False)


def test_flip_in_crc_region_is_reported_with_location() -> None:
    builder = RecordBatchBuilder(base_offset=4242)
    builder.append(1, b"k", b"v")
    buf = bytearray(builder.build())
    buf[-2] ^= 0x01
    (batch,) = MemoryRecords(bytes(buf), topic="orders", partition=7)
    assert not batch.is_valid()
    with pytest.raises(CorruptRecordError) as info:
        batch.validate_crc()
    assert info.value.topic == "orders"
    assert info.value.partition == 7
    assert info.value.offset == 4242
    assert "orders" in str(info.value) and "7" in str(info.value) and "4242" in str(info.value)


def forge(records_bytes: bytes, count: int, attributes: int = 0) -> bytes:
    """A v2 batch with arbitrary record bytes and a correct CRC."""
    body = struct.pack(">hiqqqhii", attributes, max(count - 1, 0), 0, 0, -1, -1, -1, count)
    body += records_bytes
    return struct.pack(">qiibI", 0, 9 + len(body), -1, 2, crc32c(body)) + body


@pytest.mark.parametrize(
    ("records_bytes", "count"),
    [
        (b"", 1),  # count larger than the records present
        (b"\x10\x00\x00\x00\x02k\x02v\x00", 2**31 - 1),  # hostile count
        (b"\x10\x00\x00\x00\x02k\x02v\x00" + b"\x00", 1),  # trailing garbage
        (b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 1),  # over-long varint
        (b"\x10\x00\x00\x00\xfe\xff\xff\xff\x0f\x00\x00", 1),  # huge key length
        (b"\x10\x00\x00\x00\x03\x02v\x00\x00\x00", 1),  # key length -2
        (b"\x0e\x00\x00\x00\x01\x01\xfe\xff\xff\xff\x0f\x00\x00", 1),  # huge header count
        (b"\x0e\x00\x00\x00\x01\x01\x02\x02\xff\xfe\x01", 1),  # header key not UTF-8
        (b"\x7f\x00\x00\x00\x01\x01\x00", 1),  # negative record length
        (b"\x0c\x00\x00\x00\x01\x01\x00", 0),  # records present but count 0
    ],
)
def test_hostile_records_raise_decode_error(records_bytes: bytes, count: int) -> None:
    (batch,) = MemoryRecords(forge(records_bytes, count), topic="t", partition=0)
    batch.validate_crc()
    with pytest.raises(DecodeError):
        batch.records()


def test_unknown_codec_and_magic() -> None:
    (batch,) = MemoryRecords(forge(b"", 0, attributes=6))
    with pytest.raises(DecodeError):
        batch.records()
    data = bytearray(forge(b"", 0))
    data[16] = 3
    with pytest.raises(DecodeError):
        list(MemoryRecords(bytes(data)))


def test_structural_errors() -> None:
    with pytest.raises(DecodeError):  # negative batch length
        list(MemoryRecords(struct.pack(">qi", 0, -5) + b"\x00" * 60))
    with pytest.raises(DecodeError):  # v2 batch length below its header
        list(MemoryRecords(struct.pack(">qiib", 0, 10, -1, 2) + b"\x00" * 20))
    with pytest.raises(DecodeError):
        RecordBatch(b"\x00" * 20)


def test_empty_and_tiny_inputs() -> None:
    for data in (b"", b"\x00", b"\x00" * 11, b"\x00" * 16):
        assert list(MemoryRecords(data)) == []
    assert not MemoryRecords(b"").has_next()
    assert MemoryRecords(sample_batches()).has_next()
    assert MemoryRecords(sample_batches()).next_offset() == 2


def test_batches_emptied_by_compaction_are_valid() -> None:
    (data_batch,) = MemoryRecords(forge(b"", 0))
    assert data_batch.records() == []
    (control,) = MemoryRecords(forge(b"", 0, attributes=0x30))
    control.validate_crc()
    assert control.is_control and control.is_transactional
    assert control.control_type is None
