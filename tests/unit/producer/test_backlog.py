"""A backlogged partition's next batch may grow to BACKLOG_FACTOR (64) x max_batch_size: after
a stall, each round trip (one batch per partition in flight) carries more of the backlog."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.producer.accumulator import BACKLOG_FACTOR
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Delay

PRODUCE = 0
BATCH = 16384
VALUE = b"v" * 1000


def batch_bytes(request: Any) -> list[int]:
    return [len(p.records) for t in request.topic_data for p in t.partition_data]


async def send_backlog(fc: FakeCluster, producer: AIOKafkaProducer) -> list[int]:
    """Send 200 records of 1 KB at once, wait for them; the sizes of every produced batch."""
    handles = [await producer.send("t", VALUE, partition=0) for _ in range(200)]
    for h in handles:
        await h
    return [n for r in fc.requests.select(PRODUCE, None, 0) for n in batch_bytes(r.request)]


@pytest.mark.parametrize("backlog_factor", [BACKLOG_FACTOR, 1])
async def test_a_backlog_goes_out_in_bigger_batches(backlog_factor: int, monkeypatch: Any) -> None:
    monkeypatch.setattr("aiokafka_lead.producer.accumulator.BACKLOG_FACTOR", backlog_factor)
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, max_batch_size=BATCH) as producer:
                await producer.send_and_wait("t", b"warm", partition=0)
                fc.intercept(PRODUCE, lambda *_: Delay(1.0), times=1)  # a stall
                sizes = await send_backlog(fc, producer)
    backlog = sizes[2:]  # after the warm-up and the stalled first batch
    if backlog_factor > 1:
        assert max(backlog) > BATCH * 3  # bytes: the batches grew past max_batch_size
        assert len(backlog) <= 200 * len(VALUE) // (BATCH * backlog_factor) + 2
    else:
        assert max(backlog) <= BATCH and len(backlog) >= 12


async def test_toward_a_far_node_a_backlog_keeps_max_batch_size() -> None:
    """Toward a pipelining (far) node a backlog goes in max_batch_size batches, several
    requests in flight, so that each request carries every partition's oldest records: one
    grown batch would be acknowledged only once all of it had crossed the link."""
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            stall = [False]

            def delay(*_: Any) -> Delay:  # every produce 20 ms (a far link, lanes.py), one 1 s
                stalled, stall[0] = stall[0], False
                return Delay(1.0 if stalled else 0.02)

            fc.intercept(PRODUCE, delay, times=None)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, max_batch_size=BATCH) as producer:
                for _ in range(3):
                    await producer.send_and_wait("t", b"warm", partition=0)
                stall[0] = True  # the next produce
                sizes = await send_backlog(fc, producer)
    backlog = sizes[3:]
    assert max(backlog) <= BATCH
    assert len(backlog) >= 12
