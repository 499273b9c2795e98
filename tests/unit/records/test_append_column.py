"""Arrow binary columns appended to a batch at once (the Spark sink's path): the C builder,
the pure-Python reference and record-by-record appends give the same bytes."""

from __future__ import annotations

from array import array
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow", reason="install aiokafka_lead[spark]")

from aiokafka_lead.producer.partitioner import partition_for_key, py_key_partitions  # noqa: E402
from aiokafka_lead.records import native  # noqa: E402
from aiokafka_lead.records.builder import ArrowBinary, PyRecordBatchBuilder, RecordBatchBuilder  # noqa: E402

blob = st.one_of(st.none(), st.binary(max_size=300))


def buffers(array: Any) -> ArrowBinary | None:
    if array.null_count == len(array):
        return None
    validity, offsets, data = array.buffers()
    return (
        validity if array.null_count else None,
        offsets,
        data if data is not None else pa.py_buffer(b""),
        array.offset,
        pa.types.is_large_binary(array.type),
    )


def column(values: list[bytes | None], large: bool, cut: int) -> Any:
    """A binary array of ``values`` sliced from a longer one (a non-zero array offset)."""
    kind = pa.large_binary() if large else pa.binary()
    return pa.array([b"before"] * cut + values, type=kind).slice(cut)


def fill(builder: Any, values: Any, keys: Any, rows: int) -> list[bytes]:
    """Append every row, a new batch each time one fills up; the batches' bytes."""
    out, start = [], 0
    while start < rows:
        start = builder.append_column(1_700_000_000_000, rows, values, keys, start)
        out.append(builder.build(5, 1, 7))
        builder = type(builder)(batch_size=builder.batch_size)
    return out


def test_the_extension_has_the_column_step() -> None:
    assert native.RecordsBuffer is not None and hasattr(native.RecordsBuffer, "append_column")


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(blob, blob), max_size=60),
    large=st.booleans(),
    cut=st.integers(0, 3),
    batch_size=st.sampled_from([200, 1000, 16384]),
    keyless=st.booleans(),
)
def test_c_python_and_one_by_one_give_the_same_batches(
    rows: list[tuple[bytes | None, bytes | None]], large: bool, cut: int, batch_size: int, keyless: bool
) -> None:
    keys = None if keyless else buffers(column([k for k, _ in rows], large, cut))
    values = buffers(column([v for _, v in rows], large, cut))
    c = fill(RecordBatchBuilder(batch_size=batch_size), values, keys, len(rows))
    py = fill(PyRecordBatchBuilder(batch_size=batch_size), values, keys, len(rows))
    assert c == py
    one_by_one: list[bytes] = []
    builder = RecordBatchBuilder(batch_size=batch_size)
    for key, value in rows:
        if builder.append(1_700_000_000_000, None if keyless else key, value) is None:
            one_by_one.append(builder.build(5, 1, 7))
            builder = RecordBatchBuilder(batch_size=batch_size)
            assert builder.append(1_700_000_000_000, None if keyless else key, value) == 0
    if rows:
        one_by_one.append(builder.build(5, 1, 7))
    assert c == one_by_one


@pytest.mark.parametrize("builder_class", [RecordBatchBuilder, PyRecordBatchBuilder])
def test_bad_columns_are_clear_errors(builder_class: type) -> None:
    good = buffers(pa.array([b"a", b"bb"]))
    assert good is not None
    validity, _, data, _, _ = good
    builder = builder_class()
    with pytest.raises(ValueError, match="shorter than its 3 rows"):
        builder.append_column(0, 3, good, None, 0)
    bad_offsets = pa.py_buffer(b"".join(n.to_bytes(4, "little", signed=True) for n in (0, 1, 99)))
    with pytest.raises(ValueError, match=r"row 1 has offsets 1\.\.99 outside its 3 bytes"):
        builder.append_column(0, 2, (validity, bad_offsets, data, 0, False), None, 0)
    with pytest.raises(ValueError, match="start 3 must be within"):
        builder.append_column(0, 2, good, None, 3)
    fresh = builder_class()
    assert fresh.append_column(0, 2, good, None, 0) == 2
    assert fresh.record_count == 2


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(blob, max_size=60), large=st.booleans(), cut=st.integers(0, 3), n=st.integers(1, 50))
def test_key_partitions_are_the_java_clients_in_c_and_python(
    keys: list[bytes | None], large: bool, cut: int, n: int
) -> None:
    spec = buffers(column(keys, large, cut))
    expected = [-1 if k is None else partition_for_key(k, n) for k in keys]
    assert native.key_partitions is not None
    for compute in (native.key_partitions, py_key_partitions):
        got = array("i", compute(spec, len(keys), n) if spec is not None else b"")
        assert list(got) == (expected if spec is not None else [])


def test_key_partitions_refuse_bad_arguments() -> None:
    spec = buffers(pa.array([b"k"]))
    assert native.key_partitions is not None
    for compute in (native.key_partitions, py_key_partitions):
        with pytest.raises(ValueError, match="num_partitions"):
            compute(spec, 1, 0)
        with pytest.raises(ValueError, match="shorter than its 2 rows"):
            compute(spec, 2, 3)
