"""Classic consumer groups on the fake cluster: join/sync, commits, cooperative hand-over."""

from __future__ import annotations

from typing import Any

import anyio

from aiokafka_lead.consumer import ConsumerRebalanceListener
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition
from aiokafka_lead.testing.fake import Delay, FakeCluster
from tests.support.waiting import eventually
from tests.unit.consumer.util import DEADLINE, consume, consumer, produce

FIND_COORDINATOR, JOIN_GROUP, LEAVE_GROUP, HEARTBEAT = 10, 11, 13, 12


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.revoked: list[set[TopicPartition]] = []
        self.assigned: list[set[TopicPartition]] = []
        self.lost: list[set[TopicPartition]] = []

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revoked.append(revoked)

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.assigned.append(assigned)

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.lost.append(lost)


def group_consumer(fc: FakeCluster, group: str, **kwargs: Any) -> Any:
    kwargs.setdefault("heartbeat_interval_ms", 50)
    kwargs.setdefault("session_timeout_ms", 6000)
    kwargs.setdefault("enable_auto_commit", False)
    return consumer(fc, group_id=group, **kwargs)


def parts(topic: str, n: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in range(n)]


async def test_two_members_split_partitions_then_one_leaves() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=2)
            tps = parts("t", 2)
            for tp in tps:
                produce(fc, tp, [b"a", b"b"])
            async with group_consumer(fc, "g") as c1:
                c1.subscribe(["t"])
                await eventually(lambda: c1.assignment() == set(tps))
                async with group_consumer(fc, "g") as c2:
                    c2.subscribe(["t"])
                    await eventually(lambda: len(c1.assignment()) == 1 and len(c2.assignment()) == 1)
                    assert c1.assignment() | c2.assignment() == set(tps)
                    r1 = await consume(c1, 2)
                    r2 = await consume(c2, 2)
                    assert {(r.partition, r.offset) for r in r1 + r2} == {(0, 0), (0, 1), (1, 0), (1, 1)}
                    await c1.commit()
                    await c2.commit()
                    mine = next(iter(c2.assignment()))
                    assert await c2.committed(mine) == 2
                # c2 left: c1 gets everything back and starts from c2's commit
                await eventually(lambda: c1.assignment() == set(tps))
                for tp in tps:
                    produce(fc, tp, [b"c"])
                got = await consume(c1, 2)
                assert sorted((r.partition, r.offset) for r in got) == [(0, 2), (1, 2)]
            assert fc.count(LEAVE_GROUP) == 2


async def test_cooperative_sticky_keeps_unaffected_partitions() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=4)
            tps = parts("t", 4)
            listener = Recorder()
            opts = {"partition_assignment_strategy": ["cooperative-sticky"]}
            async with group_consumer(fc, "g", **opts) as c1:
                c1.subscribe(["t"], listener=listener)
                await eventually(lambda: c1.assignment() == set(tps))
                async with group_consumer(fc, "g", **opts) as c2:
                    c2.subscribe(["t"])
                    await eventually(lambda: len(c1.assignment()) == 2 and len(c2.assignment()) == 2)
                    # c1 only ever gave up the two partitions that moved; it never lost the other two
                    assert len(listener.revoked) == 1 and len(listener.revoked[0]) == 2
                    assert c1.assignment() == set(tps) - listener.revoked[0]
                    assert listener.lost == []
                await eventually(lambda: c1.assignment() == set(tps))


async def test_static_member_does_not_leave_on_close_and_commits_with_epoch() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=1)
            tp = TopicPartition("t", 0)
            produce(fc, tp, [b"a", b"b", b"c"])
            async with group_consumer(fc, "g", group_instance_id="worker-1") as c:
                c.subscribe(["t"])
                await consume(c, 3)
                await c.commit({tp: OffsetAndMetadata(2, "meta", 0)})
                assert await c.committed(tp) == 2
            assert fc.count(LEAVE_GROUP) == 0
            stored = fc.groups.groups["g"].offsets[("t", 0)]
            assert (stored.offset, stored.leader_epoch, stored.metadata) == (2, 0, "meta")


async def test_coordinator_move_is_followed_at_once() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=1)
            async with group_consumer(fc, "g") as c:
                c.subscribe(["t"])
                await eventually(lambda: bool(c.assignment()))
                coordinator = c.coordinator
                assert coordinator is not None
                old = coordinator.coordinator_id
                new = next(n for n in (1, 2, 3) if n != old)
                finds = fc.count(FIND_COORDINATOR)
                fc.set_coordinator("g", new)
                # the group state moves with it in a real cluster; the member rejoins there
                await eventually(lambda: coordinator.coordinator_id == new)
                await eventually(lambda: bool(c.assignment()) and coordinator.in_group)
                assert fc.count(FIND_COORDINATOR) - finds <= 3
                await c.commit({TopicPartition("t", 0): 0})


async def test_member_that_stops_polling_leaves_and_rejoins_on_next_poll() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            listener = Recorder()
            async with group_consumer(fc, "g", max_poll_interval_ms=300, rebalance_timeout_ms=2000) as c:
                c.subscribe(["t"], listener=listener)
                await c.getmany(timeout_ms=10)
                await eventually(lambda: len(c.assignment()) == 2)
                # the application is busy elsewhere: no poll for longer than max_poll_interval_ms
                await fc.wait_for(lambda: fc.count(LEAVE_GROUP) == 1)
                assert not c.assignment()
                produce(fc, TopicPartition("t", 0), [b"after"])
                record = await c.getone()
                assert record.value == b"after"
                assert listener.lost == [set(parts("t", 2))]


def test_group_consumer_runs_on_trio() -> None:
    """Nothing asyncio-specific: `async with` enters the task group in the caller's task."""

    async def scenario() -> list[bytes | None]:
        with anyio.fail_after(DEADLINE):
            async with FakeCluster(brokers=2) as fc:
                fc.create_topic("t", partitions=1, leaders=[1])
                tp = TopicPartition("t", 0)
                produce(fc, tp, [b"a"])
                async with group_consumer(fc, "g", enable_auto_commit=True) as c:
                    c.subscribe(["t"])
                    values = [r.value for r in await consume(c, 1)]
                    fc.move_leader(tp, 2)
                    produce(fc, tp, [b"b"])
                    values += [r.value for r in await consume(c, 1)]
                    await c.commit()
                    assert await c.committed(tp) == 2
                return values

    assert anyio.run(scenario, backend="trio") == [b"a", b"b"]


async def test_a_join_group_held_by_the_broker_does_not_stall_fetches_from_that_broker() -> None:
    """Brokers answer one request per connection at a time, and hold a JoinGroup for the whole
    rebalance: the coordinator has a connection of its own, so fetches keep flowing."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            tp = TopicPartition("t", 0)
            opts = {"partition_assignment_strategy": ["cooperative-sticky"]}
            async with group_consumer(fc, "g", **opts) as c:
                c.subscribe(["t"])
                await eventually(lambda: c.assignment() == {tp})
                produce(fc, tp, [b"before"])
                assert (await c.getone()).value == b"before"
                fc.intercept(JOIN_GROUP, lambda *_: Delay(3.0))
                c.coordinator.request_rejoin("test: a rebalance the broker holds")
                await fc.wait_for(lambda: fc.count(JOIN_GROUP) == 2)
                with anyio.fail_after(1.5):  # well inside the 3 s the JoinGroup is held
                    # the first may come from a fetch that was already ahead of the JoinGroup
                    for value in (b"during-1", b"during-2"):
                        produce(fc, tp, [value])
                        assert (await c.getone()).value == value
