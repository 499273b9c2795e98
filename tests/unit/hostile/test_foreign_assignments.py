"""Assignments a member must refuse: a classic follower's SyncGroup answer naming a topic it
did not subscribe to, a KIP-848 heartbeat naming a partition its topic does not have. Each is
refused with a warning that names it, and never fetched; the rest of the assignment is
consumed."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from aiokafka_lead.consumer.subscription import ResetStrategy, SubscriptionState
from aiokafka_lead.protocol.messages import ConsumerGroupHeartbeatResponse, ConsumerProtocolAssignment
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster, Rewrite
from tests.support.waiting import eventually
from tests.unit.consumer.util import DEADLINE, consume, consumer, produce

FETCH, METADATA, SYNC_GROUP, CONSUMER_GROUP_HEARTBEAT = 1, 3, 14, 68


def fetched_topics(fc: FakeCluster) -> set[str]:
    """Every topic a Fetch request named (by name, or by id resolved through the fake)."""
    out: set[str] = set()
    for record in fc.requests.select(api_key=FETCH):
        for topic in record.request.topics:
            known = fc.topic_by_id(topic.topic_id) if not topic.topic else None
            out.add(topic.topic or (known.name if known is not None else str(topic.topic_id)))
    return out


def warnings_naming(caplog: pytest.LogCaptureFixture, *words: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and all(w in r.getMessage() for w in words)
    ]


async def test_a_follower_refuses_partitions_of_topics_outside_its_subscription(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def add_secret(response: Any, _frame: bytes) -> Any:
        version, assignment = ConsumerProtocolAssignment.decode_with_version(response.assignment)
        assignment.assigned_partitions.append(
            ConsumerProtocolAssignment.TopicPartition(topic="secret", partitions=[0])
        )
        response.assignment = assignment.encode_with_version(version)
        return response

    def follower_answers(_node: int, _header: Any, request: Any) -> Any:
        return None if request.assignments else Rewrite(add_secret)  # the leader sends them

    caplog.set_level(logging.WARNING, logger="aiokafka_lead")
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            fc.create_topic("secret", partitions=1)
            produce(fc, TopicPartition("secret", 0), [b"not yours"])
            fc.intercept(SYNC_GROUP, follower_answers, times=None)
            kwargs: dict[str, Any] = {"group_id": "g", "heartbeat_interval_ms": 50}
            kwargs["enable_auto_commit"] = False
            async with consumer(fc, **kwargs) as leader:
                leader.subscribe(["t"])
                await eventually(lambda: len(leader.assignment()) == 2)
                async with consumer(fc, **kwargs) as follower:
                    follower.subscribe(["t"])
                    await eventually(lambda: len(leader.assignment()) == 1 and follower.assignment())
                    assert {tp.topic for tp in follower.assignment()} == {"t"}
                    (mine,) = follower.assignment()
                    produce(fc, mine, [b"yours"])
                    assert [r.value for r in await consume(follower, 1)] == [b"yours"]
                    assert "secret" not in fetched_topics(fc)
            assert warnings_naming(caplog, "secret", "subscription")


async def test_a_kip848_member_refuses_partitions_beyond_the_topics_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def add_partition_7(response: ConsumerGroupHeartbeatResponse, _frame: bytes) -> Any:
        if response.assignment is not None:
            for tp in response.assignment.topic_partitions:
                if tp.partitions:
                    tp.partitions = [*tp.partitions, 7]
        return response

    caplog.set_level(logging.WARNING, logger="aiokafka_lead")
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            fc.intercept(CONSUMER_GROUP_HEARTBEAT, lambda *_: Rewrite(add_partition_7), times=None)
            async with consumer(fc, group_id="g", group_protocol="consumer", enable_auto_commit=False) as c:
                c.subscribe(["t"])
                await eventually(lambda: len(c.assignment()) == 2)
                assert c.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}
                produce(fc, TopicPartition("t", 1), [b"yours"])
                assert [r.value for r in await consume(c, 1)] == [b"yours"]
                heartbeats = len(fc.requests.select(api_key=CONSUMER_GROUP_HEARTBEAT))
                # later answers repeat the lie: still refused
                await fc.wait_for(
                    lambda: len(fc.requests.select(api_key=CONSUMER_GROUP_HEARTBEAT)) >= heartbeats + 2
                )
                assert TopicPartition("t", 7) not in c.assignment()
            assert warnings_naming(caplog, "7", "'t'", "partition")


async def test_a_kip848_partition_the_metadata_does_not_show_yet_is_taken_once_it_does(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A topic that just grew: the assignment names a partition the client's metadata does
    not show yet. It waits (refused meanwhile), and is taken once a refresh shows it."""

    def hide_partition_1(response: Any, _frame: bytes) -> Any:
        for topic in response.topics:
            topic.partitions = [p for p in topic.partitions if p.partition_index != 1]
        return response

    caplog.set_level(logging.WARNING, logger="aiokafka_lead")
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            lag = fc.intercept(METADATA, lambda *_: Rewrite(hide_partition_1), times=None)
            async with consumer(
                fc, group_id="g", group_protocol="consumer", enable_auto_commit=False, metadata_max_age_ms=300
            ) as c:
                c.subscribe(["t"])
                await eventually(lambda: bool(warnings_naming(caplog, "partition 1 of 't'")))
                assert c.assignment() == {TopicPartition("t", 0)}
                lag.remove()
                await eventually(lambda: c.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)})
                produce(fc, TopicPartition("t", 1), [b"grown"])
                assert [r.value for r in await consume(c, 1)] == [b"grown"]


def test_what_a_subscription_lets_a_group_assign() -> None:
    subs = SubscriptionState(ResetStrategy.EARLIEST)
    subs.subscribe(["t"])
    assert subs.wants("t") and not subs.wants("secret")
    subs.subscribe(pattern="t.*")  # a pattern: every topic it matches, internal ones excepted
    assert subs.wants("t") and subs.wants("t-new") and not subs.wants("secret")
    subs.subscribe(pattern=".*")
    assert not subs.wants("__consumer_offsets")
