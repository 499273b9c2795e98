"""kafka-python's assignor classes, which frameworks pass in ``partition_assignment_strategy``
(taskiq-aio-kafka's default is kafka-python's ``RoundRobinPartitionAssignor``), in a real
classic group: the leader runs them and the members get their round-robin shares."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from kafka.coordinator.assignors.range import RangePartitionAssignor as KafkaPythonRange
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as KafkaPythonRoundRobin

from aiokafka_lead import AIOKafkaConsumer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.structs import TopicPartition
from tests.integration.conftest import unique
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("assignor", [KafkaPythonRoundRobin, KafkaPythonRange], ids=["roundrobin", "range"])
async def test_kafka_python_assignor_shares_a_topic(
    kafka_cluster: Any, admin: AdminClient, assignor: type
) -> None:
    topic, group = unique("kp-asg"), unique("g")
    await admin.create_topics([NewTopic(topic, 4, 3)])
    members = [
        AIOKafkaConsumer(
            topic,
            bootstrap_servers=kafka_cluster.bootstrap(),
            group_id=group,
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
            partition_assignment_strategy=(assignor,),
        )
        for _ in range(2)
    ]
    try:
        with anyio.fail_after(60):
            for m in members:
                await m.start()
            everything = {TopicPartition(topic, p) for p in range(4)}

            def shared() -> bool:
                a, b = (m.assignment() for m in members)
                return len(a) == len(b) == 2 and a | b == everything

            await eventually(shared)
        by_member = sorted(
            (m._coordinator.member_id, sorted(m.assignment())) for m in members if m._coordinator
        )
        first, second = (parts for _, parts in by_member)
        if assignor is KafkaPythonRoundRobin:  # partitions dealt in turn to the sorted members
            assert [tp.partition for tp in first] == [0, 2]
            assert [tp.partition for tp in second] == [1, 3]
        else:  # consecutive ranges
            assert [tp.partition for tp in first] == [0, 1]
            assert [tp.partition for tp in second] == [2, 3]
    finally:
        with anyio.fail_after(30):
            for m in members:
                await m.stop()
