"""Builder behaviour: fullness, estimates, drain-time stamping, control batches."""

from __future__ import annotations

import os

import pytest

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.records import (
    CompressionRatioEstimator,
    CompressionType,
    ControlRecordType,
    MemoryRecords,
    RecordBatch,
    RecordBatchBuilder,
    build_control_batch,
    parse_control_record_key,
    restamp,
)


def test_first_record_always_fits() -> None:
    builder = RecordBatchBuilder(batch_size=100)
    assert builder.append(1, None, b"x" * 10_000) == 0
    assert builder.append(2, None, b"y") is None
    assert builder.record_count == 1
    assert builder.size_in_bytes() > 10_000


def test_fills_up_to_batch_size_uncompressed() -> None:
    builder = RecordBatchBuilder(batch_size=16384)
    while builder.append(0, None, b"v" * 100) is not None:
        pass
    raw = builder.build()
    assert 16384 - 120 < len(raw) <= 16384
    assert builder.size_in_bytes() == len(raw)


def test_compressed_estimate_uses_ratio() -> None:
    value = b"abcdefgh" * 12
    naive = RecordBatchBuilder(CompressionType.LZ4, 16384)
    while naive.append(0, None, value) is not None:
        pass
    naive.build()
    ratio = naive.compression_ratio
    assert ratio < 0.5
    tuned = RecordBatchBuilder(CompressionType.LZ4, 16384, compression_ratio_estimate=ratio)
    while tuned.append(0, None, value) is not None:
        pass
    assert tuned.record_count > naive.record_count
    raw = tuned.build()
    assert 16384 * 0.7 < len(raw) <= 16384


def test_ratio_estimator_deteriorates_fast_improves_slowly() -> None:
    est = CompressionRatioEstimator()
    assert est.estimate("t", 3) == 1.0
    assert est.update("t", 3, 0.5) == pytest.approx(0.995)
    assert est.update("t", 3, 0.9) == pytest.approx(0.99)
    assert est.update("t", 3, 0.1) == pytest.approx(0.985)
    assert est.update("t", 3, 1.2) == pytest.approx(1.2)
    assert est.estimate("other", 3) == 1.0


def test_append_after_build_returns_none() -> None:
    builder = RecordBatchBuilder()
    builder.append(0, None, b"a")
    builder.build()
    assert builder.is_closed
    assert builder.append(0, None, b"b") is None


def test_empty_batch_cannot_be_built() -> None:
    with pytest.raises(ValueError):
        RecordBatchBuilder().build()


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_build_again_with_new_producer_fields(codec: CompressionType) -> None:
    builder = RecordBatchBuilder(codec)
    for i in range(50):
        builder.append(1000 + i, b"k%d" % i, os.urandom(20) + b"v" * 50)
    first = builder.build()
    assert builder.build() == first  # a retry with the same values sends the same bytes
    stamped = builder.build(42, 3, 1000, partition_leader_epoch=7, is_transactional=True)
    assert stamped[61:] == first[61:]  # records neither re-encoded nor re-compressed
    batch = RecordBatch(stamped)
    batch.validate_crc()
    assert batch.crc != RecordBatch(first).crc
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, 1000)
    assert batch.partition_leader_epoch == 7
    assert batch.is_transactional
    assert batch.records() == RecordBatch(first).records()


def test_restamp_patches_header_and_crc() -> None:
    builder = RecordBatchBuilder(CompressionType.GZIP)
    for i in range(10):
        builder.append(i, None, b"value %d" % i)
    raw = builder.build()
    patched = restamp(
        raw,
        producer_id=9,
        producer_epoch=1,
        base_sequence=77,
        partition_leader_epoch=4,
        is_transactional=True,
        base_offset=500,
    )
    assert patched[61:] == raw[61:]
    batch = RecordBatch(patched)
    batch.validate_crc()
    assert (batch.base_offset, batch.producer_id, batch.producer_epoch) == (500, 9, 1)
    assert (batch.base_sequence, batch.partition_leader_epoch) == (77, 4)
    assert batch.is_transactional
    assert [r.offset for r in batch.records()] == list(range(500, 510))
    untouched = restamp(patched, producer_id=9, producer_epoch=1, base_sequence=77, is_transactional=False)
    assert not RecordBatch(untouched).is_transactional
    with pytest.raises(DecodeError):
        restamp(b"\x00" * 10, producer_id=1, producer_epoch=0, base_sequence=0)


def test_restamp_equals_build_with_same_fields() -> None:
    builder = RecordBatchBuilder(CompressionType.LZ4)
    builder.append(1, b"k", b"v")
    base = builder.build()
    assert restamp(base, producer_id=5, producer_epoch=2, base_sequence=3) == builder.build(5, 2, 3)


@pytest.mark.parametrize("marker", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_control_batch(marker: ControlRecordType) -> None:
    raw = build_control_batch(
        marker,
        producer_id=12,
        producer_epoch=3,
        timestamp_ms=99,
        coordinator_epoch=5,
        base_offset=40,
    )
    (batch,) = MemoryRecords(raw)
    batch.validate_crc()
    assert batch.is_control and batch.is_transactional
    assert batch.control_type == marker
    assert (batch.producer_id, batch.producer_epoch) == (12, 3)
    (record,) = batch.records()
    assert record.key == b"\x00\x00\x00" + bytes((int(marker),))
    assert record.value == b"\x00\x00\x00\x00\x00\x05"
    assert record.offset == 40


def test_data_batch_has_no_control_type() -> None:
    builder = RecordBatchBuilder(is_transactional=True)
    builder.append(0, None, b"x")
    batch = RecordBatch(builder.build(1, 0, 0))
    assert batch.is_transactional and not batch.is_control
    assert batch.control_type is None


def test_parse_control_record_key() -> None:
    assert parse_control_record_key(b"\x00\x00\x00\x01") == ControlRecordType.COMMIT
    assert parse_control_record_key(b"\x00\x00\x00\x63") == ControlRecordType.UNKNOWN
    for bad in (None, b"\x00\x00", b"\xff\xff\x00\x00"):
        with pytest.raises(DecodeError):
            parse_control_record_key(bad)


def test_invalid_compression_type() -> None:
    with pytest.raises(ValueError):
        RecordBatchBuilder(7)


def test_has_room_for_is_an_upper_bound() -> None:
    builder = RecordBatchBuilder(batch_size=1000)
    assert builder.has_room_for(None, b"x" * 5000)  # empty: the first record always fits
    while builder.has_room_for(b"k", b"v" * 50):
        assert builder.append(0, b"k", b"v" * 50) is not None
    assert builder.size_in_bytes() <= 1000
