"""Cross-check against an independent implementation (aiokafka), when it is installed."""

from __future__ import annotations

import pytest

from aiokafka_lead.records import CompressionType, RecordBatch, RecordBatchBuilder

default_records = pytest.importorskip("aiokafka.record.default_records")


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_aiokafka_reads_ours(codec: int) -> None:
    builder = RecordBatchBuilder(codec)
    for i in range(30):
        builder.append(
            1000 + i,
            b"k%d" % i if i % 3 else None,
            b"v" * i,
            [("h", b"x"), ("n", None)] if i % 2 else (),
        )
    raw = builder.build(5, 1, 7, is_transactional=True)
    theirs = default_records.DefaultRecordBatch(raw)
    assert theirs.validate_crc()
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (5, 1, 7)
    assert theirs.is_transactional
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs] == [
        (r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in RecordBatch(raw).records()
    ]


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_we_read_aiokafka(codec: int) -> None:
    builder = default_records.DefaultRecordBatchBuilder(2, codec, False, 9, 2, 100, 1 << 20)
    for i in range(30):
        builder.append(i, 5000 + i, b"k" if i % 2 else None, b"v" * i * 10, [("h", b"x")] if i % 4 else [])
    raw = bytes(builder.build())
    ours = RecordBatch(raw)
    ours.validate_crc()
    assert (ours.producer_id, ours.producer_epoch, ours.base_sequence) == (9, 2, 100)
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in ours.records()] == [
        (r.offset, r.timestamp, r.key, r.value, list(r.headers))
        for r in default_records.DefaultRecordBatch(raw)
    ]
