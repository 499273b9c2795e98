"""Edges of aiokafka's API that its own test suite uses, on a real cluster: send_batch
without a partition, a producer driven with ``loop.run_until_complete`` from outside its
loop, clients dropped without ``stop()`` (warned, collected, closed), seek_to_committed of
an unassigned partition without a group."""

from __future__ import annotations

import asyncio
import gc
import warnings
import weakref
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.errors import IllegalStateError
from aiokafka_lead.structs import TopicPartition
from tests.integration.conftest import unique
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

DEADLINE = 60


async def new_topic(cluster: Any, partitions: int) -> str:
    name = unique("edges")
    async with AdminClient(bootstrap_servers=cluster.bootstrap()) as admin:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    return name


async def test_send_batch_without_partition_lets_the_partitioner_choose(kafka_cluster: Any) -> None:
    with anyio.fail_after(DEADLINE):
        topic = await new_topic(kafka_cluster, 3)
        async with AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap()) as producer:
            chosen = set()
            for i in range(12):
                batch = producer.create_batch()
                batch.append(key=None, value=b"v%d" % i, timestamp=None)
                handle = await producer.send_batch(batch, topic, partition=None)
                metadata = await handle
                assert metadata.topic == topic
                chosen.add(metadata.partition)
            assert chosen <= {0, 1, 2}
            with pytest.raises(ValueError, match="no partition 3"):
                batch = producer.create_batch()
                batch.append(key=None, value=b"x", timestamp=None)
                await producer.send_batch(batch, topic, partition=3)
        async with AIOKafkaConsumer(
            bootstrap_servers=kafka_cluster.bootstrap(), auto_offset_reset="earliest"
        ) as consumer:
            tps = [TopicPartition(topic, p) for p in range(3)]
            consumer.assign(tps)
            ends = await consumer.end_offsets(tps)
            assert sum(ends.values()) == 12


def test_handle_awaited_with_run_until_complete_outside_the_loop(kafka_cluster: Any) -> None:
    async def make_topic() -> str:
        return await new_topic(kafka_cluster, 1)

    topic = asyncio.run(make_topic())
    loop = asyncio.new_event_loop()
    try:
        producer = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap())
        loop.run_until_complete(asyncio.wait_for(producer.start(), DEADLINE))
        try:
            handle = loop.run_until_complete(producer.send(topic, b"hello", partition=0))
            assert handle.get_loop() is loop  # as a Future keeps the loop it was made on
            metadata = loop.run_until_complete(asyncio.wait_for(handle, DEADLINE))
            assert (metadata.topic, metadata.partition, metadata.offset) == (topic, 0, 0)
            assert handle.get_loop() is loop
        finally:
            loop.run_until_complete(asyncio.wait_for(producer.stop(), DEADLINE))
    finally:
        loop.close()


async def _dropped_unclosed(holder: list[Any], name: str) -> None:
    """The started client in ``holder`` (its only reference) is dropped: it warns as
    aiokafka's, is collected, and closes."""
    core = holder[0]._core
    ref = weakref.ref(holder[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        holder.clear()
        gc.collect()
    messages = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    caught.clear()  # a warning holds its source (the client)
    assert any(f"Unclosed {name}" in m for m in messages), messages
    assert ref() is None, "the client was not collected"
    # its background tasks and connections are closed after it
    await eventually(lambda: not core.host.running and core._pool is None)


async def test_producer_dropped_unclosed_warns_is_collected_and_closes(kafka_cluster: Any) -> None:
    with anyio.fail_after(DEADLINE):
        topic = await new_topic(kafka_cluster, 1)
        producer = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap())
        await producer.start()
        await producer.send_and_wait(topic, b"v", partition=0)
        holder: list[Any] = [producer]
        del producer
        await _dropped_unclosed(holder, "AIOKafkaProducer")


async def test_consumer_dropped_unclosed_warns_is_collected_and_closes(kafka_cluster: Any) -> None:
    with anyio.fail_after(DEADLINE):
        topic = await new_topic(kafka_cluster, 1)
        async with AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap()) as producer:
            await producer.send_and_wait(topic, b"v", partition=0)
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=kafka_cluster.bootstrap(),
            group_id=unique("edges-g"),
            auto_offset_reset="earliest",
        )
        await consumer.start()
        assert (await consumer.getone()).value == b"v"
        holder: list[Any] = [consumer]
        del consumer
        await _dropped_unclosed(holder, "AIOKafkaConsumer")


async def test_seek_to_committed_checks_the_assignment_before_the_group(kafka_cluster: Any) -> None:
    with anyio.fail_after(DEADLINE):
        topic = await new_topic(kafka_cluster, 2)
        async with AIOKafkaConsumer(bootstrap_servers=kafka_cluster.bootstrap()) as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            with pytest.raises(IllegalStateError, match="not assigned"):
                await consumer.seek_to_committed(TopicPartition(topic, 1))
