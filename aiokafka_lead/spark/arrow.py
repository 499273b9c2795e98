"""Decoded Kafka records -> ``pyarrow.RecordBatch`` in the source's row layout.

The C extension (``record_columns``) writes every column's Arrow buffers in one pass over
the decoded records, so no Python object is made per record or per value here (the
decoder's record tuples are the input); without the
extension the same batch is built by pyarrow from Python lists (the reference, slower).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from aiokafka_lead.records import native

TIMESTAMP = pa.timestamp("us", tz="UTC")
HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS = pa.list_(pa.field("element", HEADER))


def schema(include_headers: bool) -> pa.Schema:
    """The columns of Spark's Kafka source, as Arrow types."""
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", TIMESTAMP),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", HEADERS))
    return pa.schema(fields)


def record_batch(
    chunks: list[Any], end_offset: int, topic: str, partition: int, include_headers: bool
) -> pa.RecordBatch:
    """The records of ``chunks`` (the consumer's ``getmany_batches`` slices of one partition)
    before ``end_offset``, as one record batch."""
    build = native.record_columns
    if build is None:
        return _from_lists(chunks, end_offset, topic, partition, include_headers)
    count, offset, timestamp, ts_type, key, value, headers = build(chunks, end_offset, include_headers)
    columns = [
        _binary(pa.binary(), count, key),
        _binary(pa.binary(), count, value),
        _constant_string(topic, count),
        pa.array(np.full(count, partition, dtype=np.int32)),
        pa.Array.from_buffers(pa.int64(), count, [None, pa.py_buffer(offset)]),
        pa.Array.from_buffers(TIMESTAMP, count, [None, pa.py_buffer(timestamp)]),
        pa.Array.from_buffers(pa.int32(), count, [None, pa.py_buffer(ts_type)]),
    ]
    if include_headers:
        lists_valid, lists, key_offsets, key_data, value_valid, value_offsets, value_data = headers
        n = (len(key_offsets) // 4) - 1
        keys = _binary(pa.string(), n, (None, key_offsets, key_data))
        values = _binary(pa.binary(), n, (value_valid, value_offsets, value_data))
        structs = pa.StructArray.from_arrays([keys, values], fields=list(HEADER))
        valid = None if lists_valid is None else pa.py_buffer(lists_valid)
        buffers = [valid, pa.py_buffer(lists)]
        columns.append(pa.ListArray.from_buffers(HEADERS, count, buffers, children=[structs]))
    return pa.RecordBatch.from_arrays(columns, schema=schema(include_headers))


def _binary(kind: pa.DataType, count: int, parts: tuple[bytes | None, bytes, bytes]) -> pa.Array:
    valid, offsets, data = parts
    buffers = [None if valid is None else pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(kind, count, buffers)


def _constant_string(text: str, count: int) -> pa.Array:
    """``count`` copies of ``text`` as one dictionary-free string column."""
    indices = pa.array(np.zeros(count, dtype=np.int32))
    return pa.DictionaryArray.from_arrays(indices, pa.array([text])).cast(pa.string())


def _from_lists(
    chunks: list[Any], end_offset: int, topic: str, partition: int, include_headers: bool
) -> pa.RecordBatch:
    rows = [(rec, ts_type) for records, ts_type, _ in chunks for rec in records if rec[0] < end_offset]
    data: dict[str, list[Any]] = {
        "key": [r[2] for r, _ in rows],
        "value": [r[3] for r, _ in rows],
        "topic": [topic] * len(rows),
        "partition": [partition] * len(rows),
        "offset": [r[0] for r, _ in rows],
        "timestamp": [r[1] * 1000 for r, _ in rows],
        "timestampType": [t for _, t in rows],
    }
    if include_headers:
        data["headers"] = [[{"key": k, "value": v} for k, v in r[4]] or None for r, _ in rows]
    return pa.RecordBatch.from_pydict(data, schema=schema(include_headers))
