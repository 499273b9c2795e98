"""Golden bytes, derived by hand from the RecordBatch v2 spec; one table drives both ways."""

from __future__ import annotations

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
