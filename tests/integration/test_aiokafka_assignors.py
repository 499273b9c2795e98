"""aiokafka-style assignors and the eager sticky assignor in a real classic group."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaConsumer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka_lead.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka_lead.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka_lead.structs import TopicPartition
from tests.integration.conftest import unique
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def member(bootstrap: str, group: str, strategy: Any) -> AIOKafkaConsumer[bytes, bytes]:
    return AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
        partition_assignment_strategy=(strategy,),
    )


def tps(topic: str, n: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(n)}


async def test_custom_aiokafka_style_assignor_decides(kafka_cluster: Any, admin: AdminClient) -> None:
    topic, group = unique("asg"), unique("g")
    await admin.create_topics([NewTopic(topic, 5, 3)])
    received: dict[str, list[TopicPartition]] = {}

    class OneToTheFirst(AbstractPartitionAssignor):
        """Partition 0 to the member whose id sorts first, the rest to the other."""

        name = "one-to-the-first"

        @classmethod
        def assign(
            cls, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
        ) -> dict[str, ConsumerProtocolMemberAssignment]:
            ordered = sorted(members)
            partitions = sorted(cluster.partitions_for_topic(topic) or ())
            plan = {m: ConsumerProtocolMemberAssignment(0, [], m.encode()) for m in ordered}
            plan[ordered[0]] = ConsumerProtocolMemberAssignment(
                0, [(topic, partitions[:1])], ordered[0].encode()
            )
            if len(ordered) > 1:
                plan[ordered[-1]] = ConsumerProtocolMemberAssignment(
                    0, [(topic, partitions[1:])], ordered[-1].encode()
                )
            return plan

        @classmethod
        def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
            return ConsumerProtocolMemberMetadata(0, list(topics), b"")

        @classmethod
        def on_assignment(cls, assignment: ConsumerProtocolMemberAssignment) -> None:
            received[assignment.user_data.decode()] = assignment.partitions()

    bootstrap = kafka_cluster.bootstrap()
    with anyio.fail_after(60):
        async with (
            member(bootstrap, group, OneToTheFirst) as c1,
            member(bootstrap, group, OneToTheFirst) as c2,
        ):
            c1.subscribe([topic])
            c2.subscribe([topic])
            await eventually(lambda: {len(c1.assignment()), len(c2.assignment())} == {1, 4})
            first, second = sorted([c1, c2], key=lambda c: c.group_metadata().member_id)
            assert first.assignment() == {TopicPartition(topic, 0)}
            assert second.assignment() == tps(topic, 5) - {TopicPartition(topic, 0)}
            # each member's on_assignment saw its own share and the leader's user data for it
            assert set(received[first.group_metadata().member_id]) == first.assignment()
            assert set(received[second.group_metadata().member_id]) == second.assignment()
    await admin.delete_topics([topic])


async def test_sticky_assignor_in_a_real_group(kafka_cluster: Any, admin: AdminClient) -> None:
    topic, group = unique("sticky"), unique("g")
    await admin.create_topics([NewTopic(topic, 6, 3)])
    bootstrap = kafka_cluster.bootstrap()
    with anyio.fail_after(90):
        async with member(bootstrap, group, StickyPartitionAssignor) as c1:
            c1.subscribe([topic])
            await eventually(lambda: c1.assignment() == tps(topic, 6))
            async with member(bootstrap, group, StickyPartitionAssignor) as c2:
                c2.subscribe([topic])
                await eventually(lambda: len(c1.assignment()) == 3 and len(c2.assignment()) == 3)
                assert c1.assignment() | c2.assignment() == tps(topic, 6)
                before = {1: c1.assignment(), 2: c2.assignment()}
                async with member(bootstrap, group, StickyPartitionAssignor) as c3:
                    c3.subscribe([topic])
                    await eventually(lambda: all(len(c.assignment()) == 2 for c in (c1, c2, c3)))
                    # the leader's sticky plan: each old member gave one partition to c3
                    assert c1.assignment() <= before[1] and c2.assignment() <= before[2]
                    during = {1: c1.assignment(), 2: c2.assignment()}
                await eventually(lambda: len(c1.assignment()) == 3 and len(c2.assignment()) == 3)
                assert during[1] <= c1.assignment() and during[2] <= c2.assignment()
    await admin.delete_topics([topic])
