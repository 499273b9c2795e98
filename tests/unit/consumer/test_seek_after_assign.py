"""auto_offset_reset="none": the error stays until the application seeks, as in aiokafka."""

from __future__ import annotations

import anyio
import pytest

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka_lead.consumer.errors import NoOffsetForPartitionError
from aiokafka_lead.errors import OffsetOutOfRangeError
from aiokafka_lead.testing.fake import FakeCluster


async def test_none_raises_on_every_poll_until_the_application_seeks() -> None:
    """auto_offset_reset="none" with nothing committed: every getmany()/getone() raises
    NoOffsetForPartitionError (aiokafka's behaviour; once, then a silent wait, was a stall),
    and a seek() answers it."""
    tp = TopicPartition("t", 0)
    with anyio.fail_after(10):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                for i in range(5):
                    await producer.send_and_wait("t", f"v{i}".encode(), partition=0)
            consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
                bootstrap_servers=fc.bootstrap,
                group_id=None,
                auto_offset_reset="none",
                enable_auto_commit=False,
            )
            async with consumer:
                consumer.assign([tp])
                for _ in range(3):
                    with pytest.raises(NoOffsetForPartitionError):
                        await consumer.getmany(timeout_ms=5000)
                with pytest.raises(NoOffsetForPartitionError):
                    await consumer.getone()
                consumer.seek(tp, 2)
                batch = await consumer.getmany(tp, timeout_ms=5000)
                assert [r.offset for r in batch[tp]] == [2, 3, 4]


async def test_out_of_range_under_none_raises_until_a_seek() -> None:
    tp = TopicPartition("t", 0)
    with anyio.fail_after(10):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                for i in range(3):
                    await producer.send_and_wait("t", f"v{i}".encode(), partition=0)
            async with AIOKafkaConsumer(bootstrap_servers=fc.bootstrap, auto_offset_reset="none") as consumer:
                consumer.assign([tp])
                consumer.seek(tp, 100)
                for _ in range(3):
                    with pytest.raises(OffsetOutOfRangeError):
                        await consumer.getmany(timeout_ms=5000)
                await consumer.seek_to_beginning(tp)
                batch = await consumer.getmany(tp, timeout_ms=5000)
                assert [r.offset for r in batch[tp]] == [0, 1, 2]
