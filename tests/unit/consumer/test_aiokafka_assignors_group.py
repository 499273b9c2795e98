"""aiokafka-style assignors and the sticky assignor in classic groups on the fake cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import anyio

from aiokafka_lead.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka_lead.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka_lead.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from tests.support.waiting import eventually
from tests.unit.consumer.util import DEADLINE, consumer


def group_consumer(fc: FakeCluster, **kwargs: Any) -> Any:
    return consumer(
        fc,
        group_id="g",
        heartbeat_interval_ms=50,
        session_timeout_ms=6000,
        enable_auto_commit=False,
        **kwargs,
    )


def parts(topic: str, n: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(n)}


def member_id(c: Any) -> str:
    return str(c.group_metadata().member_id)


async def test_aiokafka_style_assignor_decides_the_assignment() -> None:
    calls: list[tuple[str, Any]] = []

    class LastTakesAll(AbstractPartitionAssignor):
        name = "last-takes-all"

        @classmethod
        def assign(
            cls, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
        ) -> dict[str, ConsumerProtocolMemberAssignment]:
            calls.append(("assign", sorted((m, md.user_data) for m, md in members.items())))
            last = max(members)
            return {
                m: ConsumerProtocolMemberAssignment(
                    0, [("t", sorted(cluster.partitions_for_topic("t")))] if m == last else [], m.encode()
                )
                for m in members
            }

        @classmethod
        def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
            return ConsumerProtocolMemberMetadata(0, list(topics), b"meta")

        @classmethod
        def on_assignment(cls, assignment: ConsumerProtocolMemberAssignment) -> None:
            calls.append(("on_assignment", (assignment.partitions(), assignment.user_data)))

    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=3)
            opts = {"partition_assignment_strategy": (LastTakesAll,)}
            async with group_consumer(fc, **opts) as c1, group_consumer(fc, **opts) as c2:
                c1.subscribe(["t"])
                c2.subscribe(["t"])
                await eventually(lambda: c1.assignment() | c2.assignment() == parts("t", 3))
                await eventually(
                    lambda: len(c1.group_metadata().member_id) and len(c2.group_metadata().member_id)
                )
                last, first = sorted([c1, c2], key=member_id, reverse=True)
                await eventually(lambda: last.assignment() == parts("t", 3) and first.assignment() == set())
                # the leader saw both members' user data; each member got its own assignment user data
                assert any(
                    kind == "assign" and [u for _, u in seen] == [b"meta", b"meta"] for kind, seen in calls
                )
                # an empty assignment looks the same before and after it arrives: wait for both
                # members' on_assignment calls, then check what each got
                ids = {member_id(last).encode(), member_id(first).encode()}
                await eventually(lambda: ids <= {seen[1] for kind, seen in calls if kind == "on_assignment"})
                received = [seen for kind, seen in calls if kind == "on_assignment"]
                assert (sorted(parts("t", 3)), member_id(last).encode()) in [
                    (sorted(p), u) for p, u in received
                ]
                assert ([], member_id(first).encode()) in received


async def test_sticky_assignor_keeps_partitions_across_rebalances() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=6)
            opts = {"partition_assignment_strategy": (StickyPartitionAssignor,)}
            async with group_consumer(fc, **opts) as c1:
                c1.subscribe(["t"])
                await eventually(lambda: c1.assignment() == parts("t", 6))
                async with group_consumer(fc, **opts) as c2:
                    c2.subscribe(["t"])
                    await eventually(lambda: len(c1.assignment()) == 3 and len(c2.assignment()) == 3)
                    assert c1.assignment() | c2.assignment() == parts("t", 6)
                    before = {1: c1.assignment(), 2: c2.assignment()}
                    async with group_consumer(fc, **opts) as c3:
                        c3.subscribe(["t"])
                        await eventually(lambda: all(len(c.assignment()) == 2 for c in (c1, c2, c3)))
                        assert c1.assignment() <= before[1] and c2.assignment() <= before[2]
                        during = {1: c1.assignment(), 2: c2.assignment()}
                    # c3 left: c1 and c2 keep what they had and share c3's partitions
                    await eventually(lambda: len(c1.assignment()) == 3 and len(c2.assignment()) == 3)
                    assert during[1] <= c1.assignment() and during[2] <= c2.assignment()
