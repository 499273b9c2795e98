"""Helpers for the fake-cluster tests: raw connections and record batches."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio

from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.messages import FetchRequest, ProduceRequest
from aiokafka_lead.records import MemoryRecords, RecordBatchBuilder
from aiokafka_lead.testing.fake import FakeCluster

#: every test is bounded by this (tests finish in milliseconds; this only stops hangs)
DEADLINE = 5.0


@asynccontextmanager
async def connect(
    fc: FakeCluster, node_id: int, *, request_timeout_ms: int = 5_000, **config: Any
) -> AsyncIterator[Connection]:
    """A started Connection to one fake broker, closed on exit."""
    host, port = fc.address(node_id)
    conn = Connection(
        host,
        port,
        ConnectionConfig(request_timeout_ms=request_timeout_ms, **config),
        node_id=node_id,
    )
    async with anyio.create_task_group() as tg:
        await tg.start(conn.run)
        try:
            yield conn
        finally:
            await conn.close()


def batch(
    values: Sequence[bytes],
    *,
    keys: Sequence[bytes | None] | None = None,
    headers: Sequence[tuple[str, bytes | None]] = (),
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_ms: int = 1_700_000_000_000,
) -> bytes:
    builder = RecordBatchBuilder()
    for i, value in enumerate(values):
        key = keys[i] if keys is not None else None
        builder.append(timestamp_ms + i, key, value, headers)
    return builder.build(producer_id, producer_epoch, base_sequence)


def produce_request(topic: str, partition: int, records: bytes, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)],
            )
        ],
    )


def fetch_request(
    fc: FakeCluster,
    topic: str,
    partition: int,
    offset: int,
    *,
    current_leader_epoch: int = -1,
    last_fetched_epoch: int = -1,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                topic_id=fc.topics[topic].topic_id,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=partition,
                        current_leader_epoch=current_leader_epoch,
                        fetch_offset=offset,
                        last_fetched_epoch=last_fetched_epoch,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
    )


def produce_partition(response: Any) -> Any:
    return response.responses[0].partition_responses[0]


def fetch_partition(response: Any) -> Any:
    return response.responses[0].partitions[0]


def fetched_records(data: bytes | memoryview | None) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in MemoryRecords(bytes(data or b"")) for r in b.records()]
