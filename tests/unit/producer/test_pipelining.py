"""Pipelining (DESIGN.md invariant 24): an idempotent producer keeps sending a partition's
new batches while earlier ones are still out, on the node's one connection, and order holds
across failures and leader moves.

The fake broker, like a real one, reads one request per connection at a time; here every
produce is delayed, as on a network with a round trip far longer than loopback's (and so is
each connection's ApiVersions exchange, ``far_link``), so a request is still out (and
overdue) when the next records arrive.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.producer import AIOKafkaProducer, lanes
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Delay, Error
from tests.support.far import far_link
from tests.support.txn import read_committed

PRODUCE = 0
SLOW_S = 0.1  # every produce takes this long on the broker
GAP_S = 0.03  # between two sends: each finds the previous request out and overdue (> 10 ms)


def slow(node: int | None = None) -> Any:
    def decide(node_id: int, _header: Any, _request: Any) -> Delay | None:
        return Delay(SLOW_S) if node is None or node_id == node else None

    return decide


def carrying(value: bytes, after_s: float = 0.0) -> Any:
    def decide(_node: int, _header: Any, request: Any) -> Error | None:
        raw = b"".join(p.records or b"" for t in request.topic_data for p in t.partition_data)
        return Error(E.NOT_ENOUGH_REPLICAS, after_s) if value in raw else None  # retriable, not written

    return decide


def values(fc: FakeCluster, tp: tuple[str, int]) -> list[bytes]:
    return [r[2] for r in fc.records(tp)]


async def paced_sends(producer: AIOKafkaProducer, n: int, partition: int = 0, prefix: str = "r") -> list[Any]:
    handles = []
    for i in range(n):
        handles.append(await producer.send("t", f"{prefix}{i}".encode(), partition=partition))
        await anyio.sleep(GAP_S)  # pacing the load, not waiting for an outcome
    return handles


async def test_a_partitions_batches_are_pipelined_in_order() -> None:
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            far_link(fc)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                fc.intercept(PRODUCE, slow(), times=None)
                await producer.send_and_wait("t", b"warm", partition=0)
                handles = await paced_sends(producer, 20)
                offsets = [(await h).offset for h in handles]
                m = producer.metrics()
                assert offsets == list(range(1, 21))
                assert values(fc, ("t", 0)) == [b"warm"] + [f"r{i}".encode() for i in range(20)]
                assert m["pipelined_batches"] >= 3, m
                assert m["produce_requests"] < 21  # still batched: one request per ~20 ms, not per record
                assert m["batches_retried"] == 0 and m["epoch_bumps"] == 0


async def test_to_a_near_broker_a_partition_has_one_batch_in_flight(monkeypatch: Any) -> None:
    """To a near broker (its fastest recent answer under lanes.PIPELINE_FLOOR_S, as on
    loopback) nothing is pipelined: a backlog waits for the request out and goes in the next
    one. The floor is raised to 1 s here: on a loaded machine the fake broker's answers can
    take over the real 5 ms, and the broker would count as far."""
    monkeypatch.setattr(lanes, "PIPELINE_FLOOR_S", 1.0)
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, max_batch_size=1024) as producer:
                await producer.send_and_wait("t", b"warm", partition=0)
                handles = [await producer.send("t", bytes(600), partition=0) for _ in range(200)]
                assert [(await h).offset for h in handles] == list(range(1, 201))
                m = producer.metrics()
                assert m["pipelined_batches"] == 0 and m["produce_requests"] < 100, m


async def test_to_a_slow_broker_on_a_near_link_a_partition_has_one_batch_in_flight() -> None:
    """Every produce takes 100 ms, as at acks=all while the followers fetch, but the link is
    near: the ApiVersions exchange was answered at once. That is a slow broker, not a far
    link, and pipelining would only split the backlog into requests the broker reads one
    after another: nothing is pipelined, and the records sent meanwhile go in one request."""
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                fc.intercept(PRODUCE, slow(), times=None)
                await producer.send_and_wait("t", b"warm", partition=0)
                handles = await paced_sends(producer, 20)
                assert [(await h).offset for h in handles] == list(range(1, 21))
                m = producer.metrics()
                assert m["pipelined_batches"] == 0, m
                assert m["produce_requests"] <= 1 + 20 * GAP_S / SLOW_S + 2, m  # one per answer


async def test_without_idempotence_a_partition_has_one_batch_in_flight() -> None:
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            far_link(fc)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, acks=1) as producer:
                fc.intercept(PRODUCE, slow(), times=None)
                await producer.send_and_wait("t", b"warm", partition=0)
                handles = await paced_sends(producer, 10)
                assert [(await h).offset for h in handles] == list(range(1, 11))
                assert producer.metrics()["pipelined_batches"] == 0


async def test_batches_behind_a_failed_one_follow_it_without_backoff_or_epoch_bump() -> None:
    """r3's request fails (not written); the batches pipelined behind it reach the broker with
    a sequence gap and get OUT_OF_ORDER_SEQUENCE_NUMBER. That is not lost producer state: they
    go again as soon as r3 is written (no backoff of their own; retry_backoff_ms is 3 s
    here), in order, once each."""
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            far_link(fc)
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap, retry_backoff_ms=3000, retry_backoff_max_ms=3000
            ) as producer:
                fc.intercept(PRODUCE, carrying(b"r3"), times=1)  # consulted first: answered at once
                fc.intercept(PRODUCE, slow(), times=None)
                await producer.send_and_wait("t", b"warm", partition=0)
                handles = await paced_sends(producer, 12)
                resolved: dict[int, float] = {}
                for i, h in enumerate(handles):
                    h.add_done_callback(lambda _h, i=i: resolved.setdefault(i, time.monotonic()))
                offsets = [(await h).offset for h in handles]
                m = producer.metrics()
                assert offsets == list(range(1, 13)), offsets
                assert values(fc, ("t", 0)) == [b"warm"] + [f"r{i}".encode() for i in range(12)]
                assert m["errors"].get("OutOfOrderSequenceNumberError", 0) >= 1, m["errors"]
                assert m["epoch_bumps"] == 0
                after_r3 = max(resolved.values()) - resolved[3]
                assert after_r3 < 1.5, f"the batches behind r3 waited {after_r3:.2f}s more (a backoff?)"


@pytest.mark.parametrize("warm", [True, False])
async def test_pipelined_batches_follow_a_leader_move_in_order(warm: bool) -> None:
    """``warm=False``: a producer new to the partition. A leader without our producer state
    accepts any first sequence (as Kafka does), so a later batch sent to the new leader
    while an earlier one is still out to the old one would be written first: a partition
    pipelines only once its leader has acknowledged a batch, and only to that one node."""
    with anyio.fail_after(30):
        async with FakeCluster(brokers=2) as fc:
            fc.create_topic("t", partitions=1, replication_factor=2, leaders=[1])
            far_link(fc)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                fc.intercept(PRODUCE, slow(node=1), times=None)
                if warm:
                    await producer.send_and_wait("t", b"warm", partition=0)
                first = await paced_sends(producer, 6)
                fc.move_leader(("t", 0), 2)  # batches still out on node 1 come back NOT_LEADER
                rest = await paced_sends(producer, 6)
                offsets = [(await h).offset for h in first + rest]
                m = producer.metrics()
                base = 1 if warm else 0
                assert offsets == list(range(base, base + 12)), offsets
                sent = [f"r{i}".encode() for i in range(6)] * 2
                assert values(fc, ("t", 0)) == ([b"warm"] if warm else []) + sent
                assert m["epoch_bumps"] == 0


async def test_retried_batches_follow_each_other_to_the_new_leader() -> None:
    """After a leader move the batches that came back NOT_LEADER are resent to the new (far)
    leader pipelined, in order, instead of one per round trip."""
    with anyio.fail_after(30):
        async with FakeCluster(brokers=2) as fc:
            fc.create_topic("t", partitions=2, replication_factor=2, leaders=[1, 2])
            far_link(fc)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                fc.intercept(PRODUCE, slow(), times=None)
                await producer.send_and_wait("t", b"warm", partition=0)
                await producer.send_and_wait("t", b"warm", partition=1)  # node 2 is far too
                first = await paced_sends(producer, 6)
                before = producer.metrics()["pipelined_batches"]
                fc.move_leader(("t", 0), 2)  # batches still out on node 1 come back NOT_LEADER
                offsets = [(await h).offset for h in first]
                m = producer.metrics()
                assert offsets == list(range(1, 7)), offsets
                assert values(fc, ("t", 0)) == [b"warm"] + [f"r{i}".encode() for i in range(6)]
                assert m["batches_retried"] >= 2, m
                assert m["pipelined_batches"] > before, m  # resends went while older ones were out
                assert m["epoch_bumps"] == 0


@pytest.mark.parametrize("version", [1, 2])
async def test_a_transactional_producer_pipelines_once_a_partition_is_acknowledged(version: int) -> None:
    """In a transaction a partition's first produce is checked by the broker with the
    coordinator (KIP-890); if that check fails, batches pipelined behind it would come back
    OUT_OF_ORDER. So a partition pipelines only once a batch of it was acknowledged in this
    transaction (under protocol 1 the producer epoch, and with it ``confirmed``, survives
    the commit; under 2 every EndTxn bumps it)."""
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.txns.transaction_version = version
            fc.create_topic("t", partitions=1, replication_factor=1)
            far_link(fc)
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap, transactional_id="tx", retry_backoff_ms=10
            ) as producer:
                fc.intercept(PRODUCE, carrying(b"b0", after_s=SLOW_S), times=1)  # consulted first
                fc.intercept(PRODUCE, slow(), times=None)
                async with producer.transaction():
                    first = await paced_sends(producer, 8, prefix="a")
                pipelined = producer.metrics()["pipelined_batches"]
                async with producer.transaction():
                    second = await paced_sends(producer, 8, prefix="b")
                for h in first + second:
                    await h
                m = producer.metrics()
            got = await read_committed(fc.bootstrap, [TopicPartition("t", 0)])
    assert [r.value for r in got[TopicPartition("t", 0)]] == [
        f"{x}{i}".encode() for x in "ab" for i in range(8)
    ]
    assert pipelined >= 2, m
    assert m["transactions_committed"] == 2 and m["epoch_bumps"] == 0
    assert m["errors"] == {"NotEnoughReplicasError": 1}, m["errors"]

