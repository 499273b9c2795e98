"""A produce request parked on a broker must not hold back what does not depend on it.

The fake broker, like a real one, reads one request per connection at a time, so a
request it delays keeps everything behind it on that connection waiting (as an acks=all
produce parked in a real broker's purgatory does during a leader move). The producer
sends retries, and new batches once the parked request is overdue, on the node's second
connection (lane 1; aiokafka_lead/producer/lanes.py, DESIGN.md invariant 22) when asked to
(``connections_per_broker=2``; one connection is the default).
"""

from __future__ import annotations

import math
import time
from typing import Any

import anyio
import pytest

from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Delay

PRODUCE = 0
PARK_S = 3.0


def carries(request: Any, partition: int) -> bool:
    return any(p.index == partition for t in request.topic_data for p in t.partition_data)


def park_first_produce_of(partition: int, node: int) -> Any:
    def decide(node_id: int, _header: Any, request: Any) -> Delay | None:
        return Delay(PARK_S) if node_id == node and carries(request, partition) else None

    return decide


async def test_retry_to_a_new_leader_does_not_wait_behind_a_parked_request() -> None:
    with anyio.fail_after(30):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=2, replication_factor=3, leaders=[2, 1])
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap, retry_backoff_ms=2000, connections_per_broker=2
            ) as producer:
                for p in (0, 1):
                    await producer.send_and_wait("t", b"warm", partition=p)
                fc.intercept(PRODUCE, park_first_produce_of(0, node=2), times=1)
                parked = await producer.send("t", b"parked", partition=0)  # node 2, lane 0: held 3 s
                await fc.wait_for(lambda: fc.count(PRODUCE, node_id=2) >= 2)
                fc.move_leader(("t", 1), 2)  # partition 1 now led by node 2, the parked broker
                started = time.monotonic()
                moved = await (await producer.send("t", b"moved", partition=1))
                took = time.monotonic() - started
                assert took < 1.0, f"the retry waited {took:.2f}s behind the parked request"
                assert moved.offset == 1 and not parked.done()
                assert (await parked).offset == 1
                m = producer.metrics()
                assert m["immediate_retries"] == 1 and m["express_requests"] >= 1
                assert [r[2] for r in fc.records(("t", 1))] == [b"warm", b"moved"]


@pytest.mark.parametrize("connections", [2, 1])
async def test_new_batches_go_around_an_overdue_request_on_the_same_node(connections: int) -> None:
    """With ``connections_per_broker=1`` they wait for the parked request, as every
    single-connection client's do."""
    with anyio.fail_after(30):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=2, replication_factor=3, leaders=[2, 2])
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap, connections_per_broker=connections
            ) as producer:
                for p in (0, 1):
                    await producer.send_and_wait("t", b"warm", partition=p)
                fc.intercept(PRODUCE, park_first_produce_of(0, node=2), times=1)
                parked = await producer.send("t", b"parked", partition=0)
                await anyio.sleep(0.2)  # the parked request is now far older than node 2's latency
                started = time.monotonic()
                other = await (await producer.send("t", b"other", partition=1))
                took = time.monotonic() - started
                if connections == 2:
                    assert took < 1.0, f"an unaffected partition waited {took:.2f}s behind the parked request"
                    assert not parked.done() and producer.metrics()["express_requests"] == 1
                else:
                    assert took > PARK_S - 0.2 - 0.5 and producer.metrics()["express_requests"] == 0
                assert other.offset == 1 and (await parked).offset == 1


async def test_natural_batching_still_holds_new_batches_behind_a_young_request() -> None:
    """Without a stall, a node's new batches still wait for its in-flight request and then go
    together (invariant 10): no second connection is used."""
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=4, replication_factor=1)
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap, linger_ms=0, connections_per_broker=2
            ) as producer:
                handles = [await producer.send("t", b"x", partition=i % 4) for i in range(400)]
                for h in handles:
                    await h
                m = producer.metrics()
                assert m["express_requests"] == 0
                assert m["produce_requests"] < 200


async def test_a_partitions_first_batch_in_a_transaction_waits_for_lane_0() -> None:
    """A broker checks a partition's first produce of a transaction with the coordinator, one
    check per transactional id at a time: a second request needing a check, sent on lane 1
    while the first waits, would make the broker fail the first. So a partition with nothing
    acknowledged yet in the transaction goes on lane 0 only, while a partition already
    acknowledged in it still goes around a parked request on lane 1. (Transaction protocol 2:
    under 1 the AddPartitionsToTxn for partition 2 itself waits behind the parked request,
    on the coordinator's broker's lane 0.)"""
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.txns.transaction_version = 2
            fc.create_topic("t", partitions=3, replication_factor=1)
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap,
                transactional_id="tx",
                retry_backoff_ms=10,
                connections_per_broker=2,
            ) as producer:
                async with producer.transaction():
                    for p in (0, 1, 2):
                        await producer.send_and_wait("t", b"warm", partition=p)
                await producer.begin_transaction()
                await producer.send_and_wait("t", b"acked", partition=1)  # partition 1: acknowledged
                fc.intercept(PRODUCE, park_first_produce_of(0, node=1), times=1)
                before = fc.count(PRODUCE, node_id=1)
                parked = await producer.send("t", b"parked", partition=0)  # lane 0, held PARK_S
                await fc.wait_for(lambda: fc.count(PRODUCE, node_id=1) > before)
                around = await (await producer.send("t", b"around", partition=1))
                assert not parked.done(), "an acknowledged partition should go around on lane 1"
                first = await (await producer.send("t", b"first", partition=2))
                assert parked.done(), "a partition's first batch of the transaction went on lane 1"
                await producer.commit_transaction()
                # offsets: warm 0 and its commit marker 1 in every partition
                assert (await parked).offset == 2 and around.offset == 3 and first.offset == 2
                assert producer.metrics()["express_requests"] == 1


def test_a_node_counts_as_far_while_its_fastest_recent_request_is_slow() -> None:
    from aiokafka_lead.producer.lanes import FLOOR_SAMPLES, PIPELINE_FLOOR_S, NodeLanes

    lanes = NodeLanes()
    slow, fast = PIPELINE_FLOOR_S * 2, PIPELINE_FLOOR_S / 5
    for i in range(3):
        lanes.begin(1, 0, float(i))
        lanes.end(1, 0, float(i), slow)
        lanes.begin(2, 0, float(i))
        lanes.end(2, 0, float(i), fast)
    assert lanes.pipelining() == {1}
    lanes.begin(1, 0, 9.0)
    lanes.end(1, 0, 9.0, fast)  # one fast answer among the recent ones: near again
    assert lanes.pipelining() == set()
    for i in range(FLOOR_SAMPLES):  # ... until it leaves the recent ones
        lanes.begin(1, 0, 10.0 + i)
        lanes.end(1, 0, 10.0 + i, slow)
    assert lanes.pipelining() == {1}
    assert NodeLanes(lanes=2).pipelining() == set()  # two connections never pipeline


def test_a_partition_pipelines_only_across_a_link_whose_handshake_was_slow() -> None:
    """Slow produce answers and a quick ApiVersions exchange: a slow broker (acks=all waits
    for the followers) on a near link. Its requests still pipeline (the next one need not
    wait for the newest), but a partition keeps one batch out; a slow exchange too: a far
    link, where a partition's batches pipeline. A new connection brings its own exchange."""
    from aiokafka_lead.producer.lanes import PIPELINE_FLOOR_S, ROUND_TRIP_FLOOR_S, NodeLanes

    lanes = NodeLanes()
    for i in range(3):
        lanes.begin(1, 0, float(i))
        lanes.end(1, 0, float(i), PIPELINE_FLOOR_S * 4)
    assert lanes.pipelining() == {1}  # no exchange known yet: the produce answers decide
    lanes.round_trip(1, ROUND_TRIP_FLOOR_S / 4)
    assert lanes.pipelining() == set()
    lanes.begin(1, 0, 5.0)
    assert lanes.hold_of(1, 5.5) is None  # a request out for 0.5 s holds nothing back
    lanes.end(1, 0, 5.0, PIPELINE_FLOOR_S * 4)
    assert lanes.pipelining() == set()
    lanes.begin(2, 0, 5.0)  # a near node: its request out holds new batches back
    assert lanes.hold_of(2, 5.5) == math.inf
    lanes.end(2, 0, 5.0, None)
    lanes.round_trip(1, ROUND_TRIP_FLOOR_S * 2)  # reconnected across a far link
    assert lanes.pipelining() == {1}
    lanes.begin(1, 0, 6.0)
    lanes.end(1, 0, 6.0, PIPELINE_FLOOR_S / 5)  # ... to a fast answer: near again
    assert lanes.pipelining() == set()


def test_with_a_zero_floor_every_node_is_far_from_its_first_request(monkeypatch: pytest.MonkeyPatch) -> None:
    from aiokafka_lead.producer import lanes as lanes_module

    monkeypatch.setattr(lanes_module, "PIPELINE_FLOOR_S", 0.0)  # as the chaos tests' "pipelined"
    lanes = lanes_module.NodeLanes()
    lanes.begin(1, 0, 0.0)
    assert lanes.pipelining() == {1}
    lanes.end(1, 0, 0.0, 0.0001)
    assert lanes.pipelining() == {1}
