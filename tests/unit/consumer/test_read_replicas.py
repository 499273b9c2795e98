"""KIP-392 fetch from follower on the fake cluster: redirects, the ways back to the leader
(an error, OFFSET_OUT_OF_RANGE asking the leader first, a lost replica, a leader move with a
KIP-951 hint, expiry) and the metrics. Racks: node 1 "a", node 2 "b", node 3 "c"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.messages import FetchRequest, FetchResponse
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster, Respond, rack_aware_selector
from tests.support.waiting import eventually
from tests.unit.consumer.util import DEADLINE, FETCH, LIST_OFFSETS, consume, consumer, produce

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


@asynccontextmanager
async def racked_cluster(*, selector: bool = True) -> AsyncIterator[FakeCluster]:
    """3 brokers in racks a/b/c; topic "t" with partition 0 led by node 1 (rack a) and
    partition 1 by node 3 (rack c), both replicated on all three nodes."""
    async with FakeCluster(brokers=3) as fc:
        for node_id, rack in ((1, "a"), (2, "b"), (3, "c")):
            fc.brokers[node_id].rack = rack
        if selector:
            fc.replica_selector = rack_aware_selector
        fc.create_topic("t", partitions=2, leaders=[1, 3])
        yield fc


def in_rack_b(**kwargs: Any) -> dict[str, Any]:
    return {"client_rack": "b", "fetch_max_wait_ms": 100, **kwargs}


def partition_error_on(node: int, code: int) -> Any:
    """An intercept answering every partition of a Fetch to ``node`` with ``code``."""

    def answer(node_id: int, header: Any, request: FetchRequest) -> Respond | None:
        if node_id != node:
            return None
        topics = [
            FetchResponse.FetchableTopicResponse(
                topic=t.topic,
                topic_id=t.topic_id,
                partitions=[
                    FetchResponse.PartitionData(partition_index=p.partition, error_code=code, records=b"")
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
        return Respond(FetchResponse(responses=topics, session_id=0))

    return answer


def partitions_fetched(fc: FakeCluster, node_id: int, since: float = 0.0) -> set[TopicPartition]:
    return {
        TopicPartition("t", p.partition)
        for r in fc.requests.select(FETCH, node_id=node_id, since=since)
        for t in r.request.topics
        for p in t.partitions
    }


async def test_the_leaders_choice_of_replica_is_followed_and_reported() -> None:
    with anyio.fail_after(DEADLINE):
        async with racked_cluster() as fc, consumer(fc, **in_rack_b()) as c:
            produce(fc, TP0, [b"a0", b"a1"])
            produce(fc, TP1, [b"c0"])
            c.assign([TP0, TP1])
            records = await consume(c, 3)
            assert sorted((r.partition, r.offset, r.value) for r in records) == [
                (0, 0, b"a0"),
                (0, 1, b"a1"),
                (1, 0, b"c0"),
            ]
            metrics = c.metrics()
            assert metrics["preferred_read_replicas"] == {TP0: 2, TP1: 2}
            assert metrics["read_replica_redirects"] == 2
            # every record came from rack b's node; the leaders only said where to read
            by_node = metrics["bytes_fetched_by_node"]
            assert by_node[2] > 0 and by_node.get(1, 0) == 0 and by_node.get(3, 0) == 0
            sent_rack = {r.request.rack_id for r in fc.requests.select(FETCH)}
            assert sent_rack == {"b"}
            # more records keep coming from the replica, without asking the leaders again
            since = fc.now()
            produce(fc, TP0, [b"a2"])
            assert [r.value for r in await consume(c, 1)] == [b"a2"]
            assert partitions_fetched(fc, 1, since) == set()
            assert TP0 in partitions_fetched(fc, 2, since)


async def test_without_a_rack_or_a_selector_partitions_are_read_from_their_leaders() -> None:
    for selector, rack in ((True, None), (False, "b")):
        with anyio.fail_after(DEADLINE):
            async with racked_cluster(selector=selector) as fc, consumer(
                fc, fetch_max_wait_ms=100, client_rack=rack
            ) as c:
                produce(fc, TP0, [b"x"])
                produce(fc, TP1, [b"y"])
                c.assign([TP0, TP1])
                await consume(c, 2)
                assert c.metrics()["preferred_read_replicas"] == {}
                assert partitions_fetched(fc, 2) == set()
                assert set(c.metrics()["bytes_fetched_by_node"]) == {1, 3}


async def test_an_error_from_the_replica_sends_the_partition_back_to_its_leader() -> None:
    with anyio.fail_after(DEADLINE):
        async with racked_cluster() as fc, consumer(fc, **in_rack_b()) as c:
            produce(fc, TP0, [b"a0"])
            c.assign([TP0])
            await consume(c, 1)
            assert c.metrics()["preferred_read_replicas"] == {TP0: 2}
            since = fc.now()
            fc.intercept(FETCH, partition_error_on(2, ErrorCode.KAFKA_STORAGE_ERROR))
            produce(fc, TP0, [b"a1"])
            assert [r.value for r in await consume(c, 1)] == [b"a1"]
            assert c.metrics()["read_replica_fallbacks"] == {"KAFKA_STORAGE_ERROR": 1}
            # back at the leader, which named the replica again
            after = [r.node_id for r in fc.requests.select(FETCH, since=since)]
            assert after[:3] == [2, 1, 2]
            assert c.metrics()["preferred_read_replicas"] == {TP0: 2}


async def test_offset_out_of_range_on_the_replica_asks_the_leader_before_resetting() -> None:
    with anyio.fail_after(DEADLINE):
        async with racked_cluster() as fc, consumer(fc, **in_rack_b()) as c:
            produce(fc, TP0, [b"a0", b"a1"])
            c.assign([TP0])
            await consume(c, 2)
            assert c.metrics()["preferred_read_replicas"] == {TP0: 2}
            # the replica falls behind the consumer (say, it was truncated after an unclean
            # restart): offset 2 is out of its range, but not of the leader's
            fc.partition(TP0).replica_log_end[2] = 1
            since = fc.now()
            produce(fc, TP0, [b"a2"])
            records = await consume(c, 1)
            assert [(r.offset, r.value) for r in records] == [(2, b"a2")]  # no reset
            assert fc.count(LIST_OFFSETS, since=since) == 0
            assert c.metrics()["read_replica_fallbacks"] == {"OFFSET_OUT_OF_RANGE": 1}
            # the leader served it (its selector skips a replica without the offset)
            assert c.metrics()["bytes_fetched_by_node"][1] > 0
            assert c.metrics()["preferred_read_replicas"] == {}


async def test_offset_out_of_range_confirmed_by_the_leader_resets() -> None:
    with anyio.fail_after(DEADLINE):
        async with racked_cluster() as fc, consumer(fc, **in_rack_b()) as c:
            for value in (b"a0", b"a1", b"a2"):
                produce(fc, TP0, [value])
            c.assign([TP0])
            await consume(c, 3)
            assert c.metrics()["preferred_read_replicas"] == {TP0: 2}
            since = fc.now()
            c.seek(TP0, 10)  # beyond the log end everywhere
            records = await consume(c, 3)
            assert [(r.offset, r.value) for r in records] == [(0, b"a0"), (1, b"a1"), (2, b"a2")]
            at_10 = [
                r
                for r in fc.requests.select(FETCH, since=since)
                if r.request.topics[0].partitions[0].fetch_offset == 10
            ]
            # out of range on the replica, then on the leader: only then reset (earliest)
            assert [r.node_id for r in at_10] == [2, 1]
            resets = fc.requests.select(LIST_OFFSETS, since=since)
            assert len(resets) == 1 and resets[0].time > at_10[1].time


async def test_a_lost_replica_sends_its_partitions_back_to_their_leaders() -> None:
    with anyio.fail_after(DEADLINE):
        async with racked_cluster() as fc, consumer(fc, **in_rack_b(fetch_max_wait_ms=2000)) as c:
            produce(fc, TP0, [b"a0"])
            produce(fc, TP1, [b"c0"])
            c.assign([TP0, TP1])
            await consume(c, 2)
            assert c.metrics()["preferred_read_replicas"] == {TP0: 2, TP1: 2}
            await eventually(lambda: bool(c.fetcher.in_flight_partitions()))  # long poll on node 2
            stopped = fc.now()
            await fc.stop_node(2)
            produce(fc, TP0, [b"a1"])
            produce(fc, TP1, [b"c1"])
            records = await consume(c, 2)
            took = fc.now() - stopped
            assert sorted((r.partition, r.value) for r in records) == [(0, b"a1"), (1, b"c1")]
            assert took < 1.0, f"{took:.2f}s to read from the leaders"  # not a request timeout
            assert c.metrics()["read_replica_fallbacks"]["fetch failed"] == 2
            assert c.metrics()["preferred_read_replicas"] == {}


async def test_a_leader_naming_a_lost_replica_is_asked_again_without_the_rack() -> None:
    """A killed replica stays in the ISR until its session times out, so its leader keeps
    naming it: the client then asks that leader without its rack, and the leader serves."""
    with anyio.fail_after(DEADLINE):
        async with racked_cluster() as fc, consumer(fc, **in_rack_b(fetch_max_wait_ms=2000)) as c:
            fc.replica_selector = lambda cluster, part, rack, offset: 2 if rack == "b" else None
            produce(fc, TP0, [b"a0"])
            c.assign([TP0])
            await consume(c, 1)
            assert c.metrics()["preferred_read_replicas"] == {TP0: 2}
            await eventually(lambda: bool(c.fetcher.in_flight_partitions()))
            stopped = fc.now()
            await fc.stop_node(2)
            produce(fc, TP0, [b"a1"])
            assert [r.value for r in await consume(c, 1)] == [b"a1"]
            assert fc.now() - stopped < 1.0
            racks = [r.request.rack_id for r in fc.requests.select(FETCH, node_id=1, since=stopped)]
            assert racks[:2] == ["b", ""]  # named the lost replica, then asked without the rack
            assert c.metrics()["read_replica_fallbacks"]["named replica unreachable"] == 1
            # once the replica's backoff ends the rack is sent again (and the replica retried)
            await eventually(lambda: fc.count(FETCH, node_id=1, since=stopped) > 2 and any(
                r.request.rack_id == "b" for r in fc.requests.select(FETCH, node_id=1, since=stopped)[2:]
            ))


async def test_a_leader_move_with_a_hint_from_the_replica_goes_to_the_new_leader() -> None:
    with anyio.fail_after(DEADLINE):
        async with racked_cluster() as fc, consumer(fc, **in_rack_b(fetch_max_wait_ms=2000)) as c:
            produce(fc, TP0, [b"a0"])
            c.assign([TP0])
            await consume(c, 1)
            fc.lag_metadata([1, 2, 3])  # only the hint can tell the client
            since = fc.now()
            fc.move_leader(TP0, 3, hint="current")
            produce(fc, TP0, [b"a1"])
            records = await consume(c, 1)
            assert [(r.offset, r.leader_epoch) for r in records] == [(1, 1)]
            store = c._core.store
            assert store.leader_epoch(TP0) == 1 and store.leader_for(TP0).node_id == 3  # type: ignore[union-attr]
            assert c.fetcher.stats.hints_applied == 1
            assert c.metrics()["read_replica_fallbacks"] == {"FENCED_LEADER_EPOCH": 1}
            # replica (fenced, with the hint) -> new leader (names the replica again) -> replica
            assert [r.node_id for r in fc.requests.select(FETCH, since=since)][:3] == [2, 3, 2]
            assert c.metrics()["preferred_read_replicas"] == {TP0: 2}


async def test_the_choice_expires_and_the_leader_decides_again() -> None:
    with anyio.fail_after(DEADLINE):
        async with racked_cluster() as fc, consumer(fc, **in_rack_b(metadata_max_age_ms=300)) as c:
            produce(fc, TP0, [b"a0"])
            c.assign([TP0])
            await consume(c, 1)
            assert c.metrics()["preferred_read_replicas"] == {TP0: 2}
            fc.brokers[3].rack = "b"
            fc.brokers[2].rack = "x"  # the leader's selector would now pick node 3
            await eventually(lambda: c.metrics()["preferred_read_replicas"] == {TP0: 3})
            assert c.metrics()["read_replica_fallbacks"]["expired"] >= 1
            produce(fc, TP0, [b"a1"])
            assert [r.value for r in await consume(c, 1)] == [b"a1"]
            assert c.metrics()["bytes_fetched_by_node"][3] > 0


async def test_a_leader_naming_an_unknown_node_is_not_followed_and_does_not_spin() -> None:
    with anyio.fail_after(DEADLINE):
        async with racked_cluster() as fc, consumer(fc, **in_rack_b(retry_backoff_ms=50)) as c:
            fc.replica_selector = lambda cluster, part, rack, offset: 99
            produce(fc, TP0, [b"a0"])
            c.assign([TP0])
            await anyio.sleep(0.5)
            asked = fc.count(FETCH, node_id=1)
            assert 2 <= asked <= 12, asked  # backing off, not a hot loop
            assert c.metrics()["read_replica_fallbacks"]["named replica unknown"] >= 2
            assert c.metrics()["preferred_read_replicas"] == {}
            fc.replica_selector = rack_aware_selector
            assert [r.value for r in await consume(c, 1)] == [b"a0"]
