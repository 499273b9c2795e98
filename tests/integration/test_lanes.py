"""On a real broker: an acks=all produce parked in the leader's purgatory does not hold back
records for other partitions on the same broker (DESIGN.md invariant 22).

The follower of one partition is paused (SIGSTOP): it stays in the ISR (replica.lag.time.max.ms
is 30 s), so an acks=all produce to that partition waits in the leader's purgatory. A
broker reads one request per connection at a time, so without a second connection every
later request to that broker would wait too; with it (`connections_per_broker=2`, not the
default), a record for a partition the leader holds alone is acknowledged at once.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.testing.cluster import KafkaCluster
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


async def test_a_parked_acks_all_produce_does_not_hold_back_other_partitions(tmp_path: Path) -> None:
    cluster = KafkaCluster(tmp_path / "c", 2)
    await anyio.to_thread.run_sync(cluster.up)
    follower = next(s.pid for s in cluster.status() if s.node_id == 2)
    assert follower is not None
    paused = False
    try:
        with anyio.fail_after(120):
            async with AdminClient(bootstrap_servers=cluster.bootstrap()) as admin:
                await admin.create_topics([
                    NewTopic("parked", replica_assignments={0: [1, 2]}),
                    NewTopic("free", replica_assignments={0: [1]}),
                ])  # fmt: skip
            async with AIOKafkaProducer(
                bootstrap_servers=cluster.bootstrap(), acks="all", connections_per_broker=2
            ) as producer:
                for topic in ("parked", "free"):
                    await producer.send_and_wait(topic, b"warm")
                os.kill(follower, signal.SIGSTOP)
                paused = True
                held = await producer.send("parked", b"waits for the paused follower")

                async def sent() -> bool:  # the parked request is out, on lane 0
                    return bool(producer.metrics()["produce_requests"] >= 3)

                await eventually(sent, interval=0.01)
                started = time.monotonic()
                free = await (await producer.send("free", b"must not wait"))
                took = time.monotonic() - started
                assert took < 2.0, f"a record for another partition waited {took:.2f}s"
                assert free.offset == 1 and not held.done()
                assert producer.metrics()["express_requests"] >= 1
                os.kill(follower, signal.SIGCONT)
                paused = False
                assert (await held).offset == 1
    finally:
        if paused:
            os.kill(follower, signal.SIGCONT)
        await anyio.to_thread.run_sync(cluster.down)
