"""Builder -> reader round trips for every codec, plus hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiokafka_lead.records import (
    CompressionType,
    MemoryRecords,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    TimestampType,
)

ALL_CODECS = list(CompressionType)

Rec = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def build(records: list[Rec], codec: int = 0, **kwargs: object) -> bytes:
    builder = RecordBatchBuilder(codec, batch_size=1 << 30, **kwargs)  # type: ignore[arg-type]
    for i, (ts, key, value, headers) in enumerate(records):
        assert builder.append(ts, key, value, headers) == i
    return builder.build()


def decode(raw: bytes) -> list[Record]:
    (batch,) = MemoryRecords(raw, topic="t", partition=0)
    batch.validate_crc()
    return batch.records()


SAMPLE: list[Rec] = [
    (1_700_000_000_000, b"key", b"value", [("h1", b"a"), ("h2", None), ("", b"")]),
    (1_700_000_000_005, None, b"no key", []),
    (1_700_000_000_001, b"no value", None, []),
    (1_699_999_999_000, b"", b"", [("\u00e9t\u00e9", b"\x00\xff")]),  # negative delta
    (1_700_000_100_000, b"big", bytes(range(256)) * 4000, []),  # ~1 MB value
    (1_700_000_000_002, None, None, []),
]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_every_codec_round_trips(codec: CompressionType) -> None:
    raw = build(SAMPLE, codec)
    (batch,) = MemoryRecords(raw)
    assert batch.compression_type == codec
    assert batch.record_count == len(SAMPLE)
    assert batch.last_offset == len(SAMPLE) - 1
    assert batch.max_timestamp == max(r[0] for r in SAMPLE)
    assert batch.base_timestamp == SAMPLE[0][0]
    got = decode(raw)
    assert [(r.timestamp, r.key, r.value, list(r.headers)) for r in got] == [
        (ts, k, v, h) for ts, k, v, h in SAMPLE
    ]
    assert [r.offset for r in got] == list(range(len(SAMPLE)))
    if codec:
        assert len(raw) < sum(len(r[2] or b"") for r in SAMPLE)


def test_base_offset_added_to_offset_deltas() -> None:
    builder = RecordBatchBuilder(base_offset=1000)
    for i in range(3):
        builder.append(i, None, b"x")
    (batch,) = MemoryRecords(builder.build())
    assert (batch.base_offset, batch.last_offset) == (1000, 1002)
    assert [r.offset for r in batch.records()] == [1000, 1001, 1002]


def test_many_batches_in_one_buffer() -> None:
    raws = [build([(i, b"k", b"v%d" % i, [])], codec) for i, codec in enumerate(ALL_CODECS)]
    batches = list(MemoryRecords(memoryview(b"".join(raws))))
    assert [b.compression_type for b in batches] == ALL_CODECS
    assert [b.records()[0].value for b in batches] == [b"v%d" % i for i in range(5)]


def test_log_append_time_uses_max_timestamp() -> None:
    raw = build(
        [(10, None, b"a", []), (30, None, b"b", []), (20, None, b"c", [])],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    (batch,) = MemoryRecords(raw)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records()] == [30, 30, 30]


def test_large_varints() -> None:
    """Multi-byte varints in every field take the slow path and still decode."""
    builder = RecordBatchBuilder(batch_size=1 << 30)
    for i in range(300):
        builder.append(i * 10_000_000, b"k" * 20_000, b"v" * 70_000, [("h" * 200, b"x" * 9000)])
    records = decode(builder.build())
    assert len(records) == 300
    assert records[299].offset == 299
    assert records[299].timestamp == 299 * 10_000_000
    assert records[5].headers == (("h" * 200, b"x" * 9000),)


headers_st = st.lists(
    st.tuples(st.text(max_size=10), st.one_of(st.none(), st.binary(max_size=20))), max_size=3
)
record_st = st.tuples(
    st.integers(min_value=0, max_value=2**50),
    st.one_of(st.none(), st.binary(max_size=40)),
    st.one_of(st.none(), st.binary(max_size=300)),
    headers_st,
)


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(record_st, min_size=1, max_size=30),
    codec=st.sampled_from(ALL_CODECS),
    producer=st.tuples(st.integers(-1, 2**63 - 1), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1)),
    transactional=st.booleans(),
)
def test_hypothesis_round_trip(
    records: list[Rec], codec: int, producer: tuple[int, int, int], transactional: bool
) -> None:
    builder = RecordBatchBuilder(codec, 1 << 30, is_transactional=transactional)
    for ts, k, v, h in records:
        builder.append(ts, k, v, h)
    data = builder.build(*producer)
    batch = RecordBatch(data)
    batch.validate_crc()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.is_transactional == transactional
    got = batch.records()
    assert [(r.timestamp, r.key, r.value, list(r.headers)) for r in got] == [
        (ts, k, v, list(h)) for ts, k, v, h in records
    ]
