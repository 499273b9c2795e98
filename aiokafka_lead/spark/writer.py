"""Writing to Kafka from Spark: one idempotent producer per task, flushed before the task's
commit message is returned.

Delivery is at-least-once: Spark may re-run a failed or speculative task, and a re-run sends
its rows again. A transaction per task would not make it exactly-once (the driver cannot
commit an executor's transaction without KIP-939, nor several atomically): docs/spark.md.
Columns follow Spark's Kafka sink: ``value`` (required), ``key``, ``topic``,
``partition``, ``headers`` (array of (key string, value binary)); the ``topic`` option
overrides the column.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.spark.bridge import portal
from aiokafka_lead.spark.options import SourceOptions, SparkOptionError

CHUNK = 1000  # rows handed to the event loop at a time


@dataclass
class WriteResult(WriterCommitMessage):
    records: int


def _as_bytes(value: Any, column: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    raise SparkOptionError(f"column {column} must be binary or string, not {type(value).__name__}")


def _record(
    row: Row, topic_option: str | None
) -> tuple[str, bytes | None, bytes | None, int | None, list[Any]]:
    fields = row.asDict()
    if "value" not in fields:
        raise SparkOptionError("the rows to write need a value column")
    topic = topic_option or fields.get("topic")
    if not topic:
        raise SparkOptionError("no topic: set the topic option or give the rows a topic column")
    headers = [(str(h[0]), _as_bytes(h[1], "headers")) for h in fields.get("headers") or []]
    partition = fields.get("partition")
    return topic, _as_bytes(fields.get("key"), "key"), _as_bytes(fields["value"], "value"), partition, headers


async def _send_chunk(producer: AIOKafkaProducer, records: Sequence[tuple[Any, ...]]) -> None:
    for topic, key, value, partition, headers in records:
        await producer.send(topic, value, key=key, partition=partition, headers=headers)


def write_rows(opts: SourceOptions, rows: Iterator[Row]) -> WriteResult:
    count = 0
    with portal() as p:
        producer = AIOKafkaProducer(bootstrap_servers=opts.bootstrap_servers, **opts.client_kwargs())
        p.call(producer.start)
        try:
            chunk: list[tuple[Any, ...]] = []
            for row in rows:
                chunk.append(_record(row, opts.topic))
                if len(chunk) >= CHUNK:
                    p.call(_send_chunk, producer, chunk)
                    count += len(chunk)
                    chunk = []
            if chunk:
                p.call(_send_chunk, producer, chunk)
                count += len(chunk)
            p.call(producer.flush)
            failed = producer.metrics()["records_failed"]
            if failed:
                raise RuntimeError(
                    f"{failed} of {count} records were not delivered; the task fails so Spark retries it"
                )
        finally:
            p.call(producer.stop)
    return WriteResult(count)


class BatchWriter(DataSourceWriter):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return write_rows(self.opts, iterator)


class StreamWriter(DataSourceStreamWriter):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return write_rows(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Each task flushed before reporting: nothing is left to commit."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records already sent stay (at-least-once); Spark re-runs the batch."""
