"""Helpers for consumer tests on the fake cluster."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiokafka_lead.consumer import AIOKafkaConsumer
from aiokafka_lead.records import RecordBatchBuilder
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster

#: every test is bounded by this; they finish in well under a second
DEADLINE = 10.0
FETCH, LIST_OFFSETS, METADATA, OFFSET_FOR_LEADER_EPOCH = 1, 2, 3, 23


def produce(fc: FakeCluster, tp: TopicPartition, values: Sequence[bytes], *, key: bytes | None = None) -> int:
    """Append one batch straight into the fake's log; returns its base offset."""
    builder = RecordBatchBuilder()
    for i, value in enumerate(values):
        builder.append(1_700_000_000_000 + i, key, value, ())
    base, _ = fc.partition(tp).append(builder.build(-1, -1, -1))
    fc.notify()
    return base


def consumer(fc: FakeCluster, **kwargs: Any) -> AIOKafkaConsumer[bytes, bytes]:
    kwargs.setdefault("auto_offset_reset", "earliest")
    kwargs.setdefault("fetch_max_wait_ms", 200)
    kwargs.setdefault("retry_backoff_ms", 20)
    kwargs.setdefault("request_timeout_ms", 3000)
    return AIOKafkaConsumer(bootstrap_servers=fc.bootstrap, **kwargs)


async def consume(c: AIOKafkaConsumer[Any, Any], count: int) -> list[Any]:
    """Exactly ``count`` records (bound the caller with fail_after)."""
    out: list[Any] = []
    while len(out) < count:
        batch = await c.getmany(timeout_ms=1000, max_records=count - len(out))
        for records in batch.values():
            out.extend(records)
    return out


