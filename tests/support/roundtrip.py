"""Write records to every partition of a topic and read exactly them back."""

from __future__ import annotations

import anyio

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.structs import TopicPartition


async def produce_and_read(
    bootstrap: str, topic: str, partitions: int, per_partition: int, tag: str = "r"
) -> dict[int, list[bytes]]:
    """Produce ``per_partition`` records to each partition (acks=all), then read each
    partition from the offsets those records got; returns what was read, by partition."""
    first: dict[int, int] = {}
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        for p in range(partitions):
            handles = [
                await producer.send(topic, f"{tag}-{p}-{i}".encode(), partition=p)
                for i in range(per_partition)
            ]
            offsets = [(await handle).offset for handle in handles]
            assert offsets == list(range(offsets[0], offsets[0] + per_partition)), offsets
            first[p] = offsets[0]
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    async with AIOKafkaConsumer(bootstrap_servers=bootstrap) as consumer:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, first[tp.partition])
        with anyio.fail_after(60):
            while any(len(got[p]) < per_partition for p in got):
                for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                    got[tp.partition].extend(r.value for r in records if r.value is not None)
    return got


def expected(partitions: int, per_partition: int, tag: str = "r") -> dict[int, list[bytes]]:
    return {
        p: [f"{tag}-{p}-{i}".encode() for i in range(per_partition)] for p in range(partitions)
    }
