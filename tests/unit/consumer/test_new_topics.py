"""Subscribed topics that do not exist yet (fake cluster, auto-creation off, so each test
decides when a topic appears): start() waits for them as aiokafka's does, asking for their
metadata every retry_backoff_ms; a topic subscribed after start() is asked for at the same
cadence, not at the next periodic refresh; groups join once the topics exist."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaConsumer
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import TopicAuthorizationFailedError, UnknownTopicOrPartitionError
from aiokafka_lead.protocol.messages import MetadataResponse
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Rewrite
from tests.support.waiting import eventually
from tests.unit.consumer.util import DEADLINE, METADATA, consumer, produce

JOIN_GROUP, CONSUMER_GROUP_HEARTBEAT = 11, 68
#: the cadence under test; the periodic refresh (metadata_max_age_ms) stays at its 5 minutes
BACKOFF_MS = 100


def metadata_asks(fc: FakeCluster, topic: str) -> list[float]:
    """When the brokers received a Metadata request naming ``topic`` (monotonic times)."""
    return [
        r.time
        for r in fc.requests
        if r.api_key == METADATA
        and r.request is not None
        and r.request.topics is not None
        and any(t.name == topic for t in r.request.topics)
    ]


def new_topic_consumer(fc: FakeCluster, *topics: str, **kwargs: Any) -> AIOKafkaConsumer[bytes, bytes]:
    kwargs.setdefault("auto_offset_reset", "latest")
    kwargs.setdefault("retry_backoff_ms", BACKOFF_MS)
    c = consumer(fc, **kwargs)
    if topics:
        c.subscribe(list(topics))
    return c


async def start_while_topic_missing(fc: FakeCluster, c: AIOKafkaConsumer[Any, Any], topic: str) -> None:
    """Start ``c`` with ``topic`` missing: start() is still waiting after three Metadata
    requests for it; then the topic appears and start() returns."""
    started = anyio.Event()

    async def start() -> None:
        await c.start()
        started.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(start)
        await fc.wait_for(lambda: len(metadata_asks(fc, topic)) >= 3)
        assert not started.is_set()
        fc.create_topic(topic, partitions=2)
        await started.wait()


async def test_start_without_a_group_waits_for_the_topic_then_reads_what_is_sent_after() -> None:
    tps = {TopicPartition("t", 0), TopicPartition("t", 1)}
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            c = new_topic_consumer(fc, "t")
            try:
                await start_while_topic_missing(fc, c, "t")
                assert c.assignment() == tps
                # "latest" is resolved inside start(): a record written now is delivered
                assert await c.position(TopicPartition("t", 1), timeout_ms=0.001) == 0
                produce(fc, TopicPartition("t", 1), [b"after start"])
                record = await c.getone()
                assert (record.topic, record.partition, record.value) == ("t", 1, b"after start")
            finally:
                await c.stop()


async def test_start_asks_for_a_missing_topic_every_retry_backoff_ms() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            c = new_topic_consumer(fc, "t")
            try:
                await start_while_topic_missing(fc, c, "t")
                asks = metadata_asks(fc, "t")
                gaps = [b - a for a, b in itertools.pairwise(asks)]
                # never faster than the backoff (a refresh may take longer, never less)
                assert min(gaps) >= BACKOFF_MS / 1000 * 0.8, gaps
            finally:
                await c.stop()


async def test_start_raises_unknown_topic_after_request_timeout_when_the_topic_never_comes() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            c = new_topic_consumer(fc, "t", request_timeout_ms=1000)
            expected = "'t' not present in metadata after 1000 ms"
            with pytest.raises(UnknownTopicOrPartitionError, match=expected):
                await c.start()
            assert len(metadata_asks(fc, "t")) >= 3  # asked for all along
            await c.stop()  # a no-op after the failed start


async def test_start_raises_topic_authorization_failed_at_once() -> None:
    def unauthorized(response: MetadataResponse, frame: bytes) -> MetadataResponse:
        for topic in response.topics:
            if topic.name == "secret":
                topic.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                topic.partitions = []
        return response

    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("secret", partitions=1)
            fc.intercept(METADATA, lambda *_: Rewrite(unauthorized), times=None)
            # a request_timeout_ms longer than the test's deadline: the error comes at once
            c = new_topic_consumer(fc, "secret", request_timeout_ms=60_000)
            with pytest.raises(TopicAuthorizationFailedError, match="secret"):
                await c.start()
            await c.stop()


async def test_a_topic_subscribed_after_start_is_asked_for_until_it_appears() -> None:
    tp = TopicPartition("later", 0)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            c = new_topic_consumer(fc, auto_offset_reset="earliest")
            await c.start()
            try:
                c.subscribe(["later"])
                # the periodic refresh is minutes away: these come from the retry backoff
                await fc.wait_for(lambda: len(metadata_asks(fc, "later")) >= 3)
                assert c.assignment() == frozenset()
                fc.create_topic("later", partitions=1)
                produce(fc, tp, [b"first"])
                await eventually(lambda: c.assignment() == {tp})
                record = await c.getone()
                assert (record.offset, record.value) == (0, b"first")
                # the topic is there: no more asks at the backoff's cadence
                assert c._topics_awaited() is None
            finally:
                await c.stop()


@pytest.mark.parametrize(
    ("protocol", "join_api"), [("classic", JOIN_GROUP), ("consumer", CONSUMER_GROUP_HEARTBEAT)]
)
async def test_a_group_member_joins_once_its_missing_topic_exists(protocol: str, join_api: int) -> None:
    tps = {TopicPartition("t", 0), TopicPartition("t", 1)}
    group_keywords: dict[str, Any] = {
        "group_id": "g",
        "group_protocol": protocol,
        "enable_auto_commit": False,
        "request_timeout_ms": 6000,
    }
    if protocol == "classic":
        group_keywords.update(heartbeat_interval_ms=50, session_timeout_ms=6000)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            c = new_topic_consumer(fc, "t", **group_keywords)
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(c.start)
                    # longer than a classic member waits for metadata before a join of its own
                    await fc.wait_for(lambda: len(metadata_asks(fc, "t")) >= 25)
                    assert fc.count(join_api) == 0  # as aiokafka: the topics first, then the group
                    fc.create_topic("t", partitions=2)
                assert c.assignment() == tps
                produce(fc, TopicPartition("t", 0), [b"after start"])
                record = await c.getone()
                assert record.value == b"after start"
            finally:
                await c.stop()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_a_group_member_gets_a_topic_subscribed_after_start_once_it_exists(protocol: str) -> None:
    tp = TopicPartition("later", 0)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            group = {"group_id": "g", "group_protocol": protocol, "enable_auto_commit": False}
            c = new_topic_consumer(fc, auto_offset_reset="earliest", **group)
            await c.start()
            try:
                c.subscribe(["later"])
                await fc.wait_for(lambda: len(metadata_asks(fc, "later")) >= 3)
                fc.create_topic("later", partitions=1)
                produce(fc, tp, [b"first"])
                await eventually(lambda: c.assignment() == {tp})
                record = await c.getone()
                assert (record.offset, record.value) == (0, b"first")
            finally:
                await c.stop()
