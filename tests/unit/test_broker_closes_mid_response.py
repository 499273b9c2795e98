"""A broker that closes the connection in the middle of a response: every client
recovers on its own, and nothing is lost or duplicated. The fake writes the first bytes of
the real answer, then closes (the request itself took effect)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead import AdminClient, AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka_lead.admin.types import OffsetSpec
from aiokafka_lead.testing.fake import FakeCluster, Truncate
from tests.unit.consumer.util import consume, produce

DEADLINE = 10.0
PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT = 0, 1, 2, 3, 8
TP = TopicPartition("t", 0)


def cut(n_bytes: int) -> Any:
    return lambda node_id, header, request: Truncate(n_bytes)


@pytest.mark.parametrize("n_bytes", [0, 3, 9, 40])
async def test_produce_answer_cut_short_is_retried_without_a_duplicate(n_bytes: int) -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, retry_backoff_ms=20) as producer:
                fc.intercept(PRODUCE, cut(n_bytes), times=1)
                metadata = await producer.send_and_wait("t", b"once", partition=0)
                assert metadata.offset == 0
                assert producer.metrics()["batches_retried"] == 1
            assert [r[2] for r in fc.records(TP)] == [b"once"]  # idempotence dropped the resend


@pytest.mark.parametrize("n_bytes", [0, 9, 60])
async def test_fetch_answer_cut_short_is_fetched_again_exactly_once(n_bytes: int) -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            produce(fc, TP, [b"a", b"b", b"c"])
            fc.intercept(FETCH, cut(n_bytes), times=1)
            async with AIOKafkaConsumer(
                bootstrap_servers=fc.bootstrap, auto_offset_reset="earliest", retry_backoff_ms=20
            ) as consumer:
                consumer.assign([TP])
                assert [r.value for r in await consume(consumer, 3)] == [b"a", b"b", b"c"]
                assert await consumer.getmany(timeout_ms=100) == {}  # nothing twice


async def test_commit_and_offset_lookups_cut_short_are_retried() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            produce(fc, TP, [b"a", b"b"])
            async with AIOKafkaConsumer(
                "t",
                bootstrap_servers=fc.bootstrap,
                group_id="g",
                auto_offset_reset="earliest",
                retry_backoff_ms=20,
            ) as consumer:
                assert len(await consume(consumer, 2)) == 2
                fc.intercept(OFFSET_COMMIT, cut(5), times=1)
                await consumer.commit()
                assert await consumer.committed(TP) == 2
                fc.intercept(LIST_OFFSETS, cut(5), times=1)
                assert await consumer.end_offsets([TP]) == {TP: 2}


async def test_admin_calls_cut_short_are_retried() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AdminClient(bootstrap_servers=fc.bootstrap, retry_backoff_ms=20) as admin:
                fc.intercept(METADATA, cut(7), times=1)
                assert "t" in await admin.list_topics()
                fc.intercept(LIST_OFFSETS, cut(7), times=1)
                assert (await admin.list_offsets({TP: OffsetSpec.LATEST}))[TP].offset == 0
