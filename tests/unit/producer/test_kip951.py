"""KIP-951 on the producer, scenario by scenario on the in-process fake cluster.

Timings prove the rules: backoffs are made large (or Metadata is delayed) so that any
wait on the retry path shows as a gap of hundreds of milliseconds, while an immediate
retry takes a loopback round trip.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import KafkaTimeoutError
from aiokafka_lead.metadata import HintOutcome
from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Delay, Drop, Error
from tests.support.waiting import eventually

PRODUCE, METADATA = 0, 3
TP0, TP1 = ("t", 0), ("t", 1)


@asynccontextmanager
async def setup(
    partitions: int = 2, brokers: int = 3, hide: tuple[int, ...] = (), **kwargs: Any
) -> AsyncIterator[tuple[FakeCluster, AIOKafkaProducer]]:
    async with FakeCluster(brokers=brokers) as fc:
        fc.create_topic("t", partitions=partitions, replication_factor=3, leaders=[1] * partitions)
        fc.hidden_nodes.update(hide)
        options: dict[str, Any] = {
            "bootstrap_servers": fc.bootstrap,
            "retry_backoff_ms": 2000,
            "retry_backoff_max_ms": 8000,
            "request_timeout_ms": 5000,
            "delivery_timeout_ms": 60_000,
        }
        options.update(kwargs)
        async with AIOKafkaProducer(**options) as producer:
            for p in range(partitions):
                await producer.send_and_wait("t", b"warm", partition=p)
            yield fc, producer


def produce_nodes(fc: FakeCluster, since: float) -> list[int]:
    return [r.node_id for r in fc.requests.select(PRODUCE, None, since)]


def produce_times(fc: FakeCluster, since: float) -> list[float]:
    return [r.time for r in fc.requests.select(PRODUCE, None, since)]


def values(fc: FakeCluster, tp: tuple[str, int]) -> list[bytes | None]:
    return [r[2] for r in fc.records(tp)]


async def test_1_hint_advances_epoch_retry_is_immediate_to_new_leader() -> None:
    with anyio.fail_after(20):
        async with setup() as (fc, producer):
            fc.move_leader(TP0, 2)
            fc.intercept(METADATA, lambda *_: Delay(3.0), times=None)  # nothing may wait for this
            mark = fc.now()
            started = time.monotonic()
            md = await (await producer.send("t", b"after-move", partition=0))
            elapsed = time.monotonic() - started
            assert elapsed < 1.0  # the backoff is 2 s and Metadata answers after 3 s
            assert produce_nodes(fc, mark) == [1, 2]
            assert md.offset == 1 and values(fc, TP0) == [b"warm", b"after-move"]
            m = producer.metrics()
            assert m["leader_hints_applied"] == 1 and m["immediate_retries"] == 1
            assert m["metadata_refresh_requests"].get("produce NOT_LEADER_OR_FOLLOWER") == 1
            assert fc.count(METADATA, since=mark) <= 1  # the one expedited refresh, beside the retry


async def test_2_second_not_leader_at_same_epoch_backs_off_without_resetting_exponent() -> None:
    with anyio.fail_after(20):
        async with setup(retry_backoff_ms=500, retry_backoff_max_ms=5000) as (fc, producer):
            fc.move_leader(TP0, 2)
            fc.intercept(
                PRODUCE, lambda node, *_: Error(E.NOT_LEADER_OR_FOLLOWER) if node == 2 else None, times=1
            )
            mark = fc.now()
            await (await producer.send("t", b"x", partition=0))
            assert produce_nodes(fc, mark) == [1, 2, 2]
            t = produce_times(fc, mark)
            assert t[1] - t[0] < 0.35  # first retry after the epoch advanced: at once
            # second retry at the same epoch: attempt 2 backs off 2 * 500 ms (+-20%), not 500 ms
            assert t[2] - t[1] >= 0.75


@pytest.mark.parametrize("hint", ["same_epoch", "stale", "none"])
async def test_3_non_advancing_hints_are_ignored_and_back_off(hint: str) -> None:
    with anyio.fail_after(30):
        async with setup(retry_backoff_ms=100, retry_backoff_max_ms=1000) as (fc, producer):
            fc.lag_metadata(list(fc.brokers))  # Metadata keeps the old leader: only hints could help
            fc.move_leader(TP0, 2, hint=hint)
            mark = fc.now()
            handle = await producer.send("t", b"x", partition=0)
            await fc.wait_for(lambda: fc.count(PRODUCE, node_id=1, since=mark) >= 4)
            t = produce_times(fc, mark)
            # a hot loop would make 4 attempts within milliseconds; backoff makes >= 0.8*(100+200+400) ms
            assert t[3] - t[0] >= 0.55
            outcomes = producer._core.store.hint_outcomes
            assert outcomes[HintOutcome.APPLIED] == 0
            assert outcomes[HintOutcome.STALE_EPOCH] + outcomes[HintOutcome.INVALID] >= 3
            assert not handle.done()
            fc.unlag_metadata()  # Metadata now shows the move: that advance allows the retry
            md = await handle
            assert md.offset == 1 and produce_nodes(fc, mark)[-1] == 2


async def test_4a_hint_naming_an_unknown_node_is_ignored() -> None:
    with anyio.fail_after(30):
        async with setup(retry_backoff_ms=300) as (fc, producer):
            fc.lag_metadata(list(fc.brokers))
            fc.move_leader(TP0, 2, hint="unknown_node")
            mark = fc.now()
            handle = await producer.send("t", b"x", partition=0)
            await fc.wait_for(lambda: fc.count(PRODUCE, node_id=1, since=mark) >= 2)
            assert producer._core.store.hint_outcomes[HintOutcome.UNKNOWN_NODE] >= 1
            t = produce_times(fc, mark)
            assert t[1] - t[0] >= 0.2  # backed off
            fc.unlag_metadata()
            assert (await handle).offset == 1


async def test_4b_leader_known_only_from_node_endpoints_is_dialled() -> None:
    with anyio.fail_after(20):
        async with setup(hide=(3,)) as (fc, producer):
            assert producer._core.store.node(3) is None  # never in Metadata
            fc.move_leader(TP0, 3, hint="endpoints_only")
            mark = fc.now()
            started = time.monotonic()
            await (await producer.send("t", b"x", partition=0))
            assert time.monotonic() - started < 1.0
            assert produce_nodes(fc, mark) == [1, 3]
            assert producer._core.store.node(3) is not None


async def test_5_stale_metadata_after_applied_hint_does_not_revert_leader() -> None:
    with anyio.fail_after(20):
        async with setup() as (fc, producer):
            fc.lag_metadata(list(fc.brokers))  # frozen: leader 1, epoch 0
            fc.move_leader(TP0, 2)
            await (await producer.send("t", b"a", partition=0))
            store = producer._core.store
            for _ in range(3):
                await producer._core.refresh_metadata("test: stale view")
            assert store.partition(TopicPartition("t", 0)).leader_id == 2  # type: ignore[union-attr]
            mark = fc.now()
            await (await producer.send("t", b"b", partition=0))
            assert produce_nodes(fc, mark) == [2]
            assert store.stale_metadata_ignored >= 3


async def test_6_one_response_with_two_new_leaders() -> None:
    with anyio.fail_after(20):
        async with setup(linger_ms=100) as (fc, producer):
            fc.move_leader(TP0, 2)
            fc.move_leader(TP1, 3)
            mark = fc.now()
            started = time.monotonic()
            h0 = await producer.send("t", b"p0", partition=0)
            h1 = await producer.send("t", b"p1", partition=1)
            await h0
            await h1
            assert time.monotonic() - started < 1.0
            assert sorted(produce_nodes(fc, mark)) == [1, 2, 3]  # one request to node 1, then one each
            assert producer.metrics()["leader_hints_applied"] == 2


async def test_7_delivery_timeout_bounds_immediate_retries() -> None:
    def move_on_every_produce(node: int, header: Any, request: Any) -> None:
        leader = fc.leader(TP0)
        fc.move_leader(TP0, 1 + leader % 3)  # the leader always just moved on: every hint advances
        return None

    with anyio.fail_after(20):
        async with setup(request_timeout_ms=500, delivery_timeout_ms=1500, retry_backoff_ms=2000) as (
            fc,
            producer,
        ):
            fc.intercept(PRODUCE, move_on_every_produce, times=None)
            started = time.monotonic()
            handle = await producer.send("t", b"x", partition=0)
            with pytest.raises(KafkaTimeoutError, match="delivery_timeout_ms"):
                await handle
            assert 1.4 <= time.monotonic() - started < 5.0
            assert producer.metrics()["immediate_retries"] >= 10  # all immediate, none backed off
            fc.clear_intercepts()


async def test_8_idempotent_order_and_no_duplicates_across_leader_moves() -> None:
    with anyio.fail_after(60):
        async with setup(
            partitions=4, request_timeout_ms=1000, delivery_timeout_ms=30_000, retry_backoff_ms=50
        ) as (
            fc,
            producer,
        ):
            assert producer.metrics()["producer_id"] >= 0
            fc.intercept(PRODUCE, lambda node, *_: Drop() if node == 1 else None, times=1)  # forces a resend
            handles = []
            for i in range(2000):
                handles.append(await producer.send("t", f"v{i}".encode(), key=str(i % 4).encode()))
                if i in (500, 1200):
                    for p in range(4):
                        fc.move_leader(("t", p), 1 + fc.leader(("t", p)) % 3)
            results = [await h for h in handles]
            sent: dict[int, list[bytes]] = {}
            for i, md in enumerate(results):
                sent.setdefault(md.partition, []).append(f"v{i}".encode())
            for p, expected in sent.items():
                got = [v for v in values(fc, ("t", p)) if v != b"warm"]
                assert got == expected  # per-partition order, no duplicates, nothing lost
            assert all(fc.leader_epoch(("t", p)) == 2 for p in range(4))  # both moves happened
            assert producer.metrics()["batches_retried"] >= 1  # the dropped request was resent


async def test_9_node_restarted_on_new_port_reached_through_node_endpoints() -> None:
    with anyio.fail_after(20):
        async with setup() as (fc, producer):
            old = fc.address(2)
            fc.lag_metadata(list(fc.brokers))  # Metadata keeps announcing the old address
            await fc.restart_node(2, new_port=True)
            assert fc.address(2) != old
            fc.move_leader(TP0, 2)
            mark = fc.now()
            await (await producer.send("t", b"x", partition=0))
            assert produce_nodes(fc, mark) == [1, 2]
            assert producer._core.store.node(2).port == fc.address(2)[1]  # type: ignore[union-attr]
            conn = producer._core.pool.live_connection(2)
            assert conn is not None and conn.port == fc.address(2)[1]


async def test_10_hints_off_waits_for_backoff_and_metadata() -> None:
    with anyio.fail_after(20):
        async with setup(enable_leader_hints=False, retry_backoff_ms=300) as (fc, producer):
            fc.move_leader(TP0, 2)
            fc.intercept(METADATA, lambda *_: Delay(1.0), times=1)
            mark = fc.now()
            started = time.monotonic()
            await (await producer.send("t", b"x", partition=0))
            elapsed = time.monotonic() - started
            assert elapsed >= 0.9  # waited for the (delayed) metadata refresh
            assert produce_nodes(fc, mark)[-1] == 2
            m = producer.metrics()
            assert m["leader_hints_applied"] == 0 and m["immediate_retries"] == 0


async def test_11_retries_to_a_new_leader_busy_with_a_request_go_together_after_it() -> None:
    """Partitions that fail at their old leader at different moments while their new leader
    (one request at a time) holds a request of ours are retried there in one request once it
    is answered: sent one by one, each would wait behind the one before."""
    tp2 = ("t", 2)
    with anyio.fail_after(20):
        async with setup(partitions=3) as (fc, producer):
            fc.move_leader(tp2, 2)
            await (await producer.send("t", b"p2", partition=2))  # node 2 leads p2 for us now
            hints = producer.metrics()["leader_hints_applied"]
            fc.intercept(PRODUCE, lambda node, *_: Delay(1.0) if node == 2 else None, times=1)
            mark = fc.now()
            parked = await producer.send("t", b"parked", partition=2)
            with anyio.fail_after(5):
                await eventually(lambda: fc.count(PRODUCE, node_id=2, since=mark) == 1)
            handles = []
            for n, tp in enumerate((TP0, TP1), start=1):
                fc.move_leader(tp, 2)
                handles.append(await producer.send("t", b"moved", partition=tp[1]))
                with anyio.fail_after(5):  # its old leader answered: it waits to be retried
                    await eventually(lambda n=n: producer.metrics()["leader_hints_applied"] == hints + n)
            await parked
            for handle in handles:
                await handle
            to_node_2 = fc.requests.select(PRODUCE, 2, mark)
            assert len(to_node_2) == 2  # the parked request, then one with both retries
            retried = [(t.name, p.index) for t in to_node_2[1].request.topic_data for p in t.partition_data]
            assert sorted(retried) == [TP0, TP1]
            assert values(fc, TP0)[-1] == values(fc, TP1)[-1] == b"moved"
