"""Golden bytes, derived by hand from the RecordBatch v2 spec (one table drives both ways)
and written by the Java client (JAVA_BATCHES)."""

from __future__ import annotations

import hashlib

import pytest
from crc32c import crc32c

from aiokafka_lead.records import MemoryRecords, RecordBatch, RecordBatchBuilder, TimestampType

# One record: key b"k", value b"v", timestamp 1000, no headers, non-idempotent producer.
RECORD = bytes.fromhex(
    "10"  # length 8 (zigzag 16)
    "00"  # attributes
    "00"  # timestampDelta 0
    "00"  # offsetDelta 0
    "026b"  # key length 1, b"k"
    "0276"  # value length 1, b"v"
    "00"  # header count 0
)
CRC_COVERED = (
    bytes.fromhex(
        "0000"  # attributes: no compression, create time
        "00000000"  # lastOffsetDelta
        "00000000000003e8"  # baseTimestamp 1000
        "00000000000003e8"  # maxTimestamp 1000
        "ffffffffffffffff"  # producerId -1
        "ffff"  # producerEpoch -1
        "ffffffff"  # baseSequence -1
        "00000001"  # records count
    )
    + RECORD
)
GOLDEN = (
    bytes.fromhex(
        "0000000000000000"  # baseOffset
        "0000003a"  # batchLength 58 = 4 + 1 + 4 + 49
        "ffffffff"  # partitionLeaderEpoch
        "02"  # magic
        "716a6189"  # CRC32C of CRC_COVERED, computed independently below
    )
    + CRC_COVERED
)


def test_crc_is_crc32c_of_attributes_to_end() -> None:
    assert crc32c(CRC_COVERED) == 0x716A6189
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


def test_encode_golden() -> None:
    builder = RecordBatchBuilder()
    assert builder.append(1000, b"k", b"v") == 0
    assert builder.build() == GOLDEN


def test_decode_golden() -> None:
    (batch,) = MemoryRecords(GOLDEN)
    assert isinstance(batch, RecordBatch)
    batch.validate_crc()
    assert batch.base_offset == 0
    assert batch.last_offset == 0
    assert batch.batch_length == 58
    assert batch.partition_leader_epoch == -1
    assert batch.magic == 2
    assert batch.crc == 0x716A6189
    assert batch.compression_type == 0
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    assert not batch.is_transactional and not batch.is_control
    assert batch.max_timestamp == 1000
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.record_count == 1
    (record,) = batch.records()
    assert (record.offset, record.timestamp, record.key, record.value) == (0, 1000, b"k", b"v")
    assert record.headers == ()


@pytest.mark.parametrize(
    ("key", "value", "headers", "record_hex"),
    [
        (None, None, (), "0c000000010100"),
        (b"", b"", (), "0c000000000000"),
        (None, b"v", [("h", b"x")], "160000000102760202680278"),
        (None, b"v", [("h", None)], "1400000001027602026801"),
    ],
)
def test_record_encoding_table(
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]],
    record_hex: str,
) -> None:
    builder = RecordBatchBuilder()
    builder.append(5, key, value, headers)
    raw = builder.build()
    assert raw[61:].hex() == record_hex
    (record,) = MemoryRecords(raw).__iter__().__next__().records()
    assert record.key == key and record.value == value
    assert list(record.headers) == list(headers)


# The Java client's batches (kafka-clients 3.9.2 MemoryRecordsBuilder, uncompressed), from
# tests/unit/records/java/RecordBatchGolden.java: name -> (length, sha256, first 61 bytes).
JAVA_BATCHES = {
    "one": (70, "ec1e250e97e3b08e2d43271248159c588f4807c4bf7d73c25a4372490d5c1205", GOLDEN[:61].hex()),
    "mixed": (
        20133,
        "c3fdfca3d8f4473cb154b2aa8a90f2a26f815fb4936a8a689be76a2e272866b2",
        "000000000000000000004e99000000030244dcfde10010000000040000018bcfe568000000018bcfe6eea0"
        "00000000000003e800050000000700000005",
    ),
    "many": (
        21474,
        "057a267704e7066b89877882350cf8dd1887b3d565272d390c069203c8cdee4d",
        "0000000000000000000053d6000000000247b2b8e700000000012b000000000000138800000000000084d3"
        "000000000000002a00007ffffd780000012c",
    ),
}


def _java_case(name: str) -> bytes:
    """Our batch for the same records and producer fields as the Java program's ``name``."""
    if name == "one":
        builder = RecordBatchBuilder()
        builder.append(1000, b"k", b"v")
        return builder.build()
    if name == "mixed":
        builder = RecordBatchBuilder(batch_size=1 << 20, partition_leader_epoch=3)
        builder.append(1_700_000_000_000, None, b"value-0")
        builder.append(1_700_000_000_005, b"key-1", None, [("h1", b"x"), ("h2", None)])
        builder.append(1_699_999_999_000, b"", b"", [("é", "ü".encode())])  # a negative delta
        builder.append(1_700_000_100_000, None, None)
        builder.append(1_700_000_000_001, b"big", bytes(i % 251 for i in range(20000)))  # 3-byte length
        return builder.build(1000, 5, 7, is_transactional=True)
    builder = RecordBatchBuilder(batch_size=1 << 20, partition_leader_epoch=0)
    for i in range(300):  # offset deltas and lengths past one varint byte
        builder.append(5000 + i * 97, None if i % 3 == 0 else b"k%d" % i, b"v" * (i % 130))
    return builder.build(42, 0, 2147483000)


@pytest.mark.parametrize("name", sorted(JAVA_BATCHES))
def test_java_client_writes_the_same_bytes(name: str) -> None:
    length, digest, header = JAVA_BATCHES[name]
    ours = _java_case(name)
    assert ours[:61].hex() == header
    assert len(ours) == length
    assert hashlib.sha256(ours).hexdigest() == digest
