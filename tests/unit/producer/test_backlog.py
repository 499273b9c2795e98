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
from tests.support.far import far_link

PRODUCE = 0
BATCH = 16384
VALUE = b"v" * 1000


def batch_bytes(request: Any) -> list[int]:
    return [len(p.records) for t in request.topic_data for p in t.partition_data]


async def send_backlog(fc: FakeCluster, producer: AIOKafkaProducer, records: int = 200) -> list[int]:
    """Send ``records`` records of 1 KB at once, wait for them; the sizes of every produced batch."""
    handles = [await producer.send("t", VALUE, partition=0) for _ in range(records)]
    for h in handles:
        await h
    return [n for r in fc.requests.select(PRODUCE, None, 0) for n in batch_bytes(r.request)]


async def far_node_backlog(records: int) -> list[int]:
    """Every produce takes 20 ms (a far link, lanes.py), the one after the warm-up 1 s (a
    stall); ``records`` records sent at once behind it. The sizes of the backlog's batches."""
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            stall = [False]

            def delay(*_: Any) -> Delay:
                stalled, stall[0] = stall[0], False
                return Delay(1.0 if stalled else 0.02)

            fc.intercept(PRODUCE, delay, times=None)
            far_link(fc)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, max_batch_size=BATCH) as producer:
                for _ in range(3):
                    await producer.send_and_wait("t", b"warm", partition=0)
                stall[0] = True  # the next produce
                sizes = await send_backlog(fc, producer, records)
    return sizes[3:]


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


async def test_toward_a_far_node_a_backlog_within_the_window_keeps_max_batch_size() -> None:
    """Toward a pipelining (far) node a backlog that fits the pipeline window (5 batches in
    flight) goes in max_batch_size batches, several requests in flight, so that each request
    carries every partition's oldest records: one grown batch would be acknowledged only once
    all of it had crossed the link."""
    backlog = await far_node_backlog(60)  # ~60 KB: four 16 KB batches
    assert max(backlog) <= BATCH
    assert len(backlog) >= 4


async def test_toward_a_far_node_a_backlog_deeper_than_the_window_grows() -> None:
    """A backlog deeper than the pipeline window (a send() loop faster than the brokers, as
    under acks=all on a busy local cluster, where every node counts as far) grows its later
    batches: kept at max_batch_size, each request carried ~15 records of 1 KB a partition."""
    backlog = await far_node_backlog(600)  # ~600 KB: 37 batches of 16 KB
    window = 5  # max_in_flight_requests_per_connection: the oldest go in max_batch_size batches
    assert max(backlog[:window]) <= BATCH
    assert max(backlog) > BATCH * 3
    assert len(backlog) <= 20
