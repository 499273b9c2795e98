"""Writing to Kafka from Spark: Arrow record batches to the worker's idempotent producer;
a task reports success only once every one of its records was acknowledged.

Spark hands the writers ``pyarrow.RecordBatch`` objects (``DataSourceArrowWriter``,
``DataSourceStreamArrowWriter``). Rows without headers go from the Arrow buffers straight
into producer batches (``BatchBuilder.append_column``: no Python object per row), grouped
by topic and partition: the partition column, else the default partitioner's murmur2 of
the key (computed over the column), else (no key) the partitioner's choice per batch. Rows
with headers, or keyed rows under a custom partitioner, go to ``send()`` a row at a time.
A record the brokers did not take fails the task with its partition and error, and the
task's commit message is never returned for records not acknowledged.

Delivery is at-least-once: Spark may re-run a failed or speculative task, and a re-run sends
its rows again. A transaction per task would not make it exactly-once (the driver cannot
commit an executor's transaction without KIP-939, nor several atomically): docs/spark.md.
Columns follow Spark's Kafka sink: ``value`` (required), ``key``, ``topic``,
``partition``, ``headers`` (array of (key string, value binary)); the ``topic`` option
overrides the column.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from aiokafka_lead.errors import KafkaError
from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.producer.batch import DeliveryHandle
from aiokafka_lead.producer.producer import BatchBuilder
from aiokafka_lead.records.builder import ArrowBinary
from aiokafka_lead.spark.bridge import clients
from aiokafka_lead.spark.options import SourceOptions, SparkOptionError

#: record batches whose records may be in flight at once; then the task waits for the oldest
IN_FLIGHT_BATCHES = 8
EMPTY = pa.py_buffer(b"")


class DeliveryFailedError(KafkaError):
    """A record of the task was not acknowledged: the task fails, and Spark retries it."""


@dataclass
class WriteResult(WriterCommitMessage):
    records: int


def _bytes_column(batch: pa.RecordBatch, name: str) -> list[Any] | None:
    """A binary or string column as bytes values (None where null), or None if absent."""
    column = _binary_array(batch, name)
    if column is None:
        return None
    values: list[Any] = column.to_pylist()
    return values


def _records(batch: pa.RecordBatch, topic_option: str | None) -> Sequence[tuple[Any, ...]]:
    """(topic, key, value, partition, headers) columns of one record batch."""
    n = batch.num_rows
    values = _bytes_column(batch, "value")
    if values is None:
        raise SparkOptionError("the rows to write need a value column")
    keys = _bytes_column(batch, "key") or [None] * n
    if topic_option:
        topics: list[Any] = [topic_option] * n
    elif "topic" in batch.schema.names:
        topics = batch.column("topic").to_pylist()
    else:
        raise SparkOptionError("no topic: set the topic option or give the rows a topic column")
    partitions = batch.column("partition").to_pylist() if "partition" in batch.schema.names else [None] * n
    headers: list[Any] = [None] * n
    if "headers" in batch.schema.names:
        headers = [
            None if hs is None else [(h["key"], h["value"]) for h in hs]
            for hs in batch.column("headers").to_pylist()
        ]
    return list(zip(topics, keys, values, partitions, headers, strict=True))


async def _send(producer: AIOKafkaProducer, records: Sequence[tuple[Any, ...]]) -> list[DeliveryHandle]:
    handles = []
    for topic, key, value, partition, headers in records:
        if not topic:
            raise SparkOptionError("a row has no topic: set the topic option or fill the topic column")
        handles.append(await producer.send(topic, value, key=key, partition=partition, headers=headers))
    return handles


async def _settle(sent: list[DeliveryHandle] | list[BatchBuilder]) -> None:
    """Wait until every record is acknowledged (a handle per row sent, or the batches sent
    whole, every record of each, also when the producer split one); the first failure
    fails the task."""
    for item in sent:
        try:
            await (item.delivered() if isinstance(item, BatchBuilder) else item)
        except KafkaError as exc:
            tp = item.topic_partition
            where = f"{tp.topic}-{tp.partition}" if tp is not None else "Kafka"
            raise DeliveryFailedError(
                f"a record to {where} was not delivered: {exc!r}; the task fails and Spark retries it"
            ) from exc


def _binary_array(batch: pa.RecordBatch, name: str) -> pa.Array | None:
    """A binary or string column as a binary array, or None if absent."""
    index = batch.schema.get_field_index(name)
    if index < 0:
        return None
    column = batch.column(index)
    if pa.types.is_string(column.type):
        return column.cast(pa.binary())
    if pa.types.is_large_string(column.type):
        return column.cast(pa.large_binary())
    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        raise SparkOptionError(f"column {name} must be binary or string, not {column.type}")
    return column


def _buffers(array: pa.Array | None) -> ArrowBinary | None:
    """A binary array's buffers as ``BatchBuilder.append_column`` takes them (None: all null)."""
    if array is None or array.null_count == len(array):
        return None
    validity, offsets, data = array.buffers()
    return (
        validity if array.null_count else None,
        offsets,
        data if data is not None else EMPTY,
        array.offset,
        pa.types.is_large_binary(array.type),
    )


def _all_null(batch: pa.RecordBatch, name: str) -> bool:
    return name not in batch.schema.names or batch.column(name).null_count == batch.num_rows


def _by_topic(batch: pa.RecordBatch, topic_option: str | None) -> list[tuple[str, pa.RecordBatch]] | None:
    if topic_option:
        return [(topic_option, batch)]
    if "topic" not in batch.schema.names:
        raise SparkOptionError("no topic: set the topic option or give the rows a topic column")
    column = batch.column("topic")
    if column.null_count or pc.any(pc.equal(column, "")).as_py():
        return None  # send()'s path names the row without a topic
    return [(t, batch.filter(pc.equal(column, t))) for t in pc.unique(column).to_pylist()]


def _split(rows: pa.RecordBatch, partitions: pa.Array) -> list[tuple[int | None, pa.RecordBatch]]:
    """Rows by partition (-1: the partitioner's choice)."""
    if len(pc.unique(partitions)) == 1:
        only = partitions[0].as_py()
        return [(None if only < 0 else only, rows)]
    return [
        (None if p < 0 else p, rows.filter(pc.equal(partitions, p)))
        for p in pc.unique(partitions).to_pylist()
    ]


async def _column_groups(
    producer: AIOKafkaProducer, batch: pa.RecordBatch, topic_option: str | None
) -> list[tuple[str, int | None, pa.RecordBatch]] | None:
    """The rows as (topic, partition or None, rows) groups for the columnar path, or None when
    a row needs send()'s: headers, a null topic or partition, a custom partitioner with keys.
    Keyed rows without a partition go where the default partitioner puts their keys."""
    if "value" not in batch.schema.names:
        raise SparkOptionError("the rows to write need a value column")
    if not _all_null(batch, "headers"):
        return None
    by_topic = _by_topic(batch, topic_option)
    if by_topic is None:
        return None
    groups: list[tuple[str, int | None, pa.RecordBatch]] = []
    if not _all_null(batch, "partition"):
        if batch.column("partition").null_count:
            return None
        for topic, rows in by_topic:
            groups.extend((topic, p, part) for p, part in _split(rows, rows.column("partition")))
        return groups
    for topic, rows in by_topic:
        keys = _buffers(_binary_array(rows, "key"))
        if keys is None:
            groups.append((topic, None, rows))
            continue
        placed = await producer.key_column_partitions(topic, keys, rows.num_rows)
        if placed is None:
            return None
        partitions = pa.Array.from_buffers(pa.int32(), rows.num_rows, [None, pa.py_buffer(placed)])
        groups.extend((topic, p, part) for p, part in _split(rows, partitions))
    return groups


async def _send_columns(
    producer: AIOKafkaProducer, batch: pa.RecordBatch, topic_option: str | None
) -> list[BatchBuilder] | None:
    """The rows appended to producer batches straight from their Arrow buffers (the batches
    sent are returned); None (nothing sent) when a row needs send()'s path."""
    groups = await _column_groups(producer, batch, topic_option)
    if groups is None:
        return None
    sent = []
    for topic, partition, rows in groups:
        count = rows.num_rows
        values, keys = _buffers(_binary_array(rows, "value")), _buffers(_binary_array(rows, "key"))
        start = 0
        while start < count:
            built = producer.create_backlog_batch()  # the rows are a backlog already
            start = built.append_column(count, values, keys, start)
            await producer.send_batch(built, topic, partition=partition)
            sent.append(built)
    return sent


def _producer_key(opts: SourceOptions) -> tuple[Any, ...]:
    return ("producer", opts.bootstrap_servers, opts.properties)


def write_batches(opts: SourceOptions, batches: Iterator[pa.RecordBatch]) -> WriteResult:
    key = _producer_key(opts)
    make = functools.partial(
        AIOKafkaProducer, bootstrap_servers=opts.bootstrap_servers, **opts.client_kwargs()
    )
    p, producer = clients.get(key, make)
    count = 0
    pending: deque[list[DeliveryHandle] | list[BatchBuilder]] = deque()
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            sent: list[DeliveryHandle] | list[BatchBuilder] | None
            sent = p.call(_send_columns, producer, batch, opts.topic)
            if sent is None:
                sent = p.call(_send, producer, _records(batch, opts.topic))
            pending.append(sent)
            count += batch.num_rows
            if len(pending) > IN_FLIGHT_BATCHES:
                p.call(_settle, pending.popleft())
        p.call(producer.flush)
        while pending:
            p.call(_settle, pending.popleft())
    except Exception:
        clients.drop(key)  # after a failure the producer's state is unknown: the next task gets a new one
        raise
    return WriteResult(count)


class BatchWriter(DataSourceArrowWriter):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_batches(self.opts, iterator)


class StreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_batches(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Each task waited for its acknowledgements before reporting: nothing is left to commit."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records already sent stay (at-least-once); Spark re-runs the batch."""
