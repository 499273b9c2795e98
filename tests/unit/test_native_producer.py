"""The producer's C steps against their pure-Python twins: the builder's per-record step
(``RecordsBuffer`` under ``RecordBatchBuilder``), the delivery handle's fields, murmur2 and
the clock, input for input."""

from __future__ import annotations

import gc
import time
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiokafka_lead.producer.batch import DeliveryHandle, ProducerBatch, PyHandleFields
from aiokafka_lead.producer.partitioner import murmur2, py_murmur2
from aiokafka_lead.records import CompressionType, MemoryRecords, RecordBatchBuilder, native
from aiokafka_lead.records.builder import PyRecordBatchBuilder
from aiokafka_lead.structs import TopicPartition

BUILDERS = (RecordBatchBuilder, PyRecordBatchBuilder)


def test_the_builder_runs_on_the_extension() -> None:
    assert native.RecordsBuffer is not None, native.unavailable_reason
    assert RecordBatchBuilder.__mro__[-2] is native.RecordsBuffer
    assert PyRecordBatchBuilder is not RecordBatchBuilder


blobs = st.none() | st.binary(max_size=300) | st.binary(min_size=16_380, max_size=16_400)
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=40)), max_size=5)
# timestamps and their deltas fit in int64 (the producer refuses any other timestamp)
records = st.lists(
    st.tuples(st.integers(0, 2**62), blobs, blobs, headers | st.just(())), min_size=1, max_size=40
)


def _fill(cls: type[Any], rows: list[Any], batch_size: int, codec: int) -> tuple[list[int | None], Any]:
    builder = cls(codec, batch_size, partition_leader_epoch=4)
    # a row without headers (``()``) takes the three-argument call (the C step's own path)
    answers = [builder.append(*row) if row[3] != () else builder.append(*row[:3]) for row in rows]
    return answers, builder


@settings(max_examples=100, deadline=None)
@given(rows=records, batch_size=st.integers(62, 40_000), codec=st.sampled_from([0, CompressionType.LZ4]))
def test_c_and_python_builders_write_the_same_batches(rows: list[Any], batch_size: int, codec: int) -> None:
    c_answers, c_builder = _fill(RecordBatchBuilder, rows, batch_size, codec)
    py_answers, py_builder = _fill(PyRecordBatchBuilder, rows, batch_size, codec)
    assert c_answers == py_answers  # the same records fit, at the same offset deltas
    assert c_answers[0] == 0
    for attr in ("record_count", "max_timestamp", "uncompressed_size"):
        assert getattr(c_builder, attr) == getattr(py_builder, attr), attr
    assert c_builder.size_in_bytes() == py_builder.size_in_bytes()
    assert c_builder.has_room_for(b"k", b"v" * 10) == py_builder.has_room_for(b"k", b"v" * 10)
    built = c_builder.build(77, 3, 1000, is_transactional=True)
    assert built == py_builder.build(77, 3, 1000, is_transactional=True)
    for builder in (c_builder, py_builder):  # the request's (header, records) parts: the same bytes
        head, payload = builder.build_parts(77, 3, 1000, is_transactional=True)
        assert len(head) == 61 and head + bytes(payload) == built
    assert c_builder.append(1, None, b"late") is None and py_builder.append(1, None, b"late") is None
    (batch,) = MemoryRecords(built)
    batch.validate_crc()
    kept = [row for row, answer in zip(rows, c_answers, strict=True) if answer is not None]
    decoded = batch.records()
    assert [(r.timestamp, r.key, r.value, list(r.headers)) for r in decoded] == [
        (ts, key, value, list(hs)) for ts, key, value, hs in kept
    ]


@pytest.mark.parametrize("cls", BUILDERS, ids=["c", "python"])
def test_bytes_like_keys_values_and_header_lists(cls: type[Any]) -> None:
    builder = cls()
    builder.append(5, bytearray(b"k"), memoryview(b"value"), [["h", b"x"]])
    builder.append(6, None, None, ())
    reference = PyRecordBatchBuilder()
    reference.append(5, b"k", b"value", [("h", b"x")])
    reference.append(6, None, None)
    assert builder.build() == reference.build()


BAD_APPENDS = [
    ((1, "text", b"v"), TypeError),  # a str key
    ((1, None, 42), TypeError),  # an int value
    ((1, None, b"v", [("h", "text")]), TypeError),  # a str header value
    ((1, None, b"v", [(b"h", b"x")]), TypeError),  # a bytes header key
    ((1, None, b"v", [("h", b"x", b"y")]), TypeError),  # not a pair
    ((1, None, b"v", ["hx"]), TypeError),  # not a pair
    ((1, None, b"v", [("\ud800", b"x")]), UnicodeEncodeError),  # a lone surrogate
]


@pytest.mark.parametrize(("args", "error"), BAD_APPENDS)
def test_bad_records_raise_the_same_error_and_change_nothing(args: tuple[Any, ...], error: type) -> None:
    for cls in BUILDERS:
        builder = cls()
        builder.append(0, b"first", b"v")
        with pytest.raises(error):
            builder.append(*args)
        assert builder.record_count == 1, cls
        assert builder.append(2, None, b"next") == 1
    c, py = (cls() for cls in BUILDERS)
    for builder in (c, py):
        builder.append(0, b"first", b"v")
        with pytest.raises(error):
            builder.append(*args)
        builder.append(2, None, b"next")
    assert c.build() == py.build()


def test_a_timestamp_outside_int64_is_refused_by_the_c_step() -> None:
    builder = RecordBatchBuilder()
    with pytest.raises(OverflowError):
        builder.append(2**63, None, b"v")
    assert builder.record_count == 0
    builder.append(2**62, None, b"v")
    with pytest.raises(OverflowError):
        builder.append(-(2**62) - 1, None, b"v")  # its delta from the first does not fit
    assert builder.record_count == 1


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=100))
def test_murmur2_matches_python(data: bytes) -> None:
    assert murmur2(data) == py_murmur2(data)
    assert murmur2(bytearray(data)) == py_murmur2(data)


def test_murmur2_known_values() -> None:
    assert murmur2 is native.murmur2
    # org.apache.kafka.common.utils.UtilsTest.testMurmur2
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        bytes([ord("a"), ord("b"), ord("c")]): 479470107,
    }
    for data, expected in cases.items():
        assert murmur2(data) == expected == py_murmur2(data)


def test_now_ms_is_the_wall_clock() -> None:
    assert native.now_ms is not None
    before = time.time_ns() // 1_000_000
    now = native.now_ms()
    after = time.time_ns() // 1_000_000
    assert before <= now <= after


@pytest.mark.parametrize("fields", [native.HandleFields, PyHandleFields], ids=["c", "python"])
def test_handle_fields_twins(fields: Any) -> None:
    assert DeliveryHandle.__mro__[1] is native.HandleFields
    batch = object()
    handle = fields(batch, 5, 1_700_000_000_000)
    assert (handle._batch, handle._index, handle._timestamp, handle._cancelled) == (
        batch,
        5,
        1_700_000_000_000,
        False,
    )
    other = object()
    handle._batch, handle._index, handle._cancelled = other, 2, True  # a split moves the record
    assert (handle._batch, handle._index, handle._cancelled) == (other, 2, True)
    with pytest.raises(TypeError):
        fields(batch, 5)


def test_a_handle_in_a_cycle_with_its_batch_is_collected() -> None:
    batch = ProducerBatch(TopicPartition("t", 0), RecordBatchBuilder())
    handle = batch.try_append(1, None, b"v", ())
    assert handle is not None
    batch.callbacks.append((0, lambda h: None, handle))  # batch -> handle -> batch
    gone = weakref.ref(batch)
    del batch, handle
    gc.collect()
    assert gone() is None


def test_sealed_records_are_a_view_of_the_c_buffer_and_the_same_bytes_as_the_python_twin() -> None:
    c_builder = RecordBatchBuilder(0, 1 << 20)
    py_builder = PyRecordBatchBuilder(0, 1 << 20)
    for builder in (c_builder, py_builder):
        for i in range(50):
            assert builder.append(1_000 + i, b"k%d" % i, b"v" * i) == i
    view = c_builder._sealed_records()
    assert isinstance(view, memoryview) and view.readonly
    assert bytes(view) == py_builder._sealed_records() == c_builder._records_bytes()
    assert c_builder.append(2_000, None, b"late") is None  # sealed, as after close()
    assert c_builder.build(5, 1, 0) == py_builder.build(5, 1, 0)  # the batch from the view
    assert bytes(c_builder._sealed_records()) == bytes(view)  # again: the same buffer


def test_sealed_records_never_move_and_hold_no_reference_back_to_their_builder() -> None:
    builder = RecordBatchBuilder(0, 1 << 20)
    builder.append(1, None, b"x")
    view = builder._sealed_records()
    before = bytes(view)
    builder._sealed = False  # only a test reopens it
    with pytest.raises(BufferError, match="cannot grow"):
        builder.append(2, None, b"y" * 100_000)  # would move the buffer under the view
    assert bytes(view) == before
    builder.close()  # the builder keeps the view as its payload
    reached: list[Any] = [builder._payload]
    for _ in range(4):  # the view, its managed buffer, the records' owner: not the builder
        reached = [r for obj in reached for r in gc.get_referents(obj)]
        assert not any(r is builder for r in reached)
    del builder
    assert bytes(view) == before  # the view keeps the records alive
