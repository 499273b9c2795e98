"""Decoded records -> Arrow record batches: the C column builder against the pure-Python one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow", reason="install aiokafka_lead[spark]")

from aiokafka_lead.records import native  # noqa: E402
from aiokafka_lead.spark import arrow  # noqa: E402

blob = st.one_of(st.none(), st.binary(max_size=40))
header = st.tuples(st.text(max_size=8), blob)
record_fields = st.tuples(st.integers(0, 2**40), blob, blob, st.lists(header, max_size=3).map(tuple))


@st.composite
def chunk_lists(draw: Any) -> list[Any]:
    """Chunks as getmany_batches gives them: offsets increase across and within chunks."""
    chunks, offset = [], draw(st.integers(0, 1000))
    for _ in range(draw(st.integers(0, 4))):
        records = []
        for ts, key, value, headers in draw(st.lists(record_fields, max_size=20)):
            offset += draw(st.integers(1, 3))
            records.append((offset, ts, key, value, headers))
        chunks.append((records, draw(st.sampled_from([0, 1])), -1))
    return chunks


def python_batch(chunks: list[Any], end: int, headers: bool) -> Any:
    built, native.record_columns = native.record_columns, None
    try:
        return arrow.record_batch(chunks, end, "topic", 4, headers)
    finally:
        native.record_columns = built


def test_the_extension_builds_columns() -> None:
    assert native.record_columns is not None, native.unavailable_reason


@settings(max_examples=300, deadline=None)
@given(chunks=chunk_lists(), cut=st.integers(0, 80), headers=st.booleans())
def test_c_columns_equal_the_python_reference(chunks: list[Any], cut: int, headers: bool) -> None:
    first = chunks[0][0][0][0] if chunks and chunks[0][0] else 0
    end = first + cut
    assert native.record_columns is not None, native.unavailable_reason
    batch = arrow.record_batch(chunks, end, "topic", 4, headers)
    batch.validate(full=True)
    assert batch.equals(python_batch(chunks, end, headers))
    assert batch.schema == arrow.schema(headers)


def test_rows_match_spark_kafka_layout() -> None:
    chunks = [([(5, 1000, b"k", None, (("h", b"x"), ("g", None))), (6, 2000, None, b"v", ())], 1, 3)]
    rows = arrow.record_batch(chunks, 100, "t", 2, True).to_pylist()
    fields = ("key", "value", "topic", "partition", "offset", "timestampType")
    assert [tuple(r[f] for f in fields) for r in rows] == [
        (b"k", None, "t", 2, 5, 1),
        (None, b"v", "t", 2, 6, 1),
    ]
    assert rows[0]["timestamp"].timestamp() == 1.0
    assert rows[0]["headers"] == [{"key": "h", "value": b"x"}, {"key": "g", "value": None}]
    assert rows[1]["headers"] is None  # no headers: null, as Spark's Kafka source gives


def test_bad_input_is_a_clear_error() -> None:
    assert native.record_columns is not None, native.unavailable_reason
    with pytest.raises(TypeError, match="Record tuples"):
        native.record_columns([([(1, 2, 3)], 0, -1)], 10, False)
    with pytest.raises(TypeError, match="expected bytes, str or None"):
        native.record_columns([([(1, 2, 3, b"v", ())], 0, -1)], 10, False)
