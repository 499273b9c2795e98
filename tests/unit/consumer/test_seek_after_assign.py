"""A seek after assign answers the pending "no offset to start from" error (auto_offset_reset="none")."""

from __future__ import annotations

import anyio

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from tests.support.waiting import eventually


async def has_errors(consumer: AIOKafkaConsumer[bytes, bytes]) -> bool:
    return bool(consumer._errors)


async def test_seek_after_assign_clears_the_missing_offset_error() -> None:
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
                # let the consumer look for a starting position and find none
                await eventually(lambda: has_errors(consumer), interval=0.01)
                consumer.seek(tp, 2)
                batch = await consumer.getmany(tp, timeout_ms=5000)
                assert [r.offset for r in batch[tp]] == [2, 3, 4]
