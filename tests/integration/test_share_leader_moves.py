"""Share consumers while partition leadership moves (the session's 3-node cluster, Kafka's
default share-group settings: 5 s heartbeats, 30 s locks)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AdminClient
from aiokafka_lead.admin.types import ConfigResource
from aiokafka_lead.share import AIOKafkaShareConsumer
from aiokafka_lead.testing.leaders import rotate_leadership
from tests.integration.conftest import unique


async def test_leader_moves_during_consumption_lose_nothing(
    kafka_cluster: Any, admin: AdminClient, topic3: str
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    group = unique("share-moves")
    await admin.alter_configs([ConfigResource("group", group, {"share.auto.offset.reset": "earliest"})])
    total = 600
    seen: Counter[tuple[int, int]] = Counter()
    redelivered = 0
    done = anyio.Event()
    produced = anyio.Event()

    async def member() -> None:
        nonlocal redelivered
        async with AIOKafkaShareConsumer(
            topic3, group_id=group, bootstrap_servers=bootstrap, max_poll_records=20, fetch_max_wait_ms=200
        ) as c:
            while not done.is_set():
                for tp, records in (await c.getmany(timeout_ms=200)).items():
                    for r in records:
                        seen[(tp.partition, r.offset)] += 1
                        redelivered += r.delivery_count > 1
                if produced.is_set() and len(seen) >= total:
                    done.set()

    async def load() -> None:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
            for i in range(total):
                await producer.send(topic3, b"%d" % i, partition=i % 3)
                if i % 200 == 199:
                    await producer.flush()
                    await rotate_leadership(admin, [topic3])
            await producer.flush()
        produced.set()

    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            tg.start_soon(member)
            tg.start_soon(member)
            tg.start_soon(load)
    per_partition = {p: sorted(o for q, o in seen if q == p) for p in range(3)}
    assert {p: len(offsets) for p, offsets in per_partition.items()} == {0: 200, 1: 200, 2: 200}
    assert all(offsets == list(range(200)) for offsets in per_partition.values())
    print(f"redelivered after the moves: {redelivered}; delivered twice: {sum(n > 1 for n in seen.values())}")
