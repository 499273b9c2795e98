"""Topics a consumer subscribes to before they exist, on the real 3-node cluster (its
brokers create a topic when a client's Metadata request asks for it).

start() asks for the subscribed topics until the brokers have created them, then assigns
them (or joins the group) with their starting positions in place: a record sent right
after start() is read under "latest"; a topic nobody creates fails start() after
request_timeout_ms. A topic subscribed after start(), or matched by a
pattern later, is picked up without waiting for the periodic metadata refresh's minutes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.consumer import AIOKafkaConsumer
from aiokafka_lead.errors import UnknownTopicOrPartitionError
from aiokafka_lead.structs import TopicPartition
from tests.integration.conftest import unique
from tests.integration.test_consumer import RawProducer
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

#: what any one wait of these tests may take (each is over in about a second)
DEADLINE = 30.0


@pytest.fixture
async def cleanup(admin: AdminClient) -> AsyncIterator[list[str]]:
    """Topics the test made (through auto-creation or the admin client), deleted afterwards."""
    topics: list[str] = []
    yield topics
    existing = set(await admin.list_topics())
    gone = [t for t in topics if t in existing]
    if gone:
        await admin.delete_topics(gone)


GROUPS = [
    pytest.param({}, id="no-group"),
    pytest.param({"group_protocol": "classic"}, id="classic"),
    pytest.param({"group_protocol": "consumer"}, id="consumer"),
]


@pytest.mark.parametrize("group", GROUPS)
async def test_a_record_sent_right_after_start_to_a_new_topic_is_read(
    kafka_cluster: Any, cleanup: list[str], group: dict[str, Any]
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("new")
    cleanup.append(topic)
    if group:
        group = {**group, "group_id": unique("g"), "enable_auto_commit": False}
    with anyio.fail_after(DEADLINE):
        async with AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, **group) as c:
            tp = TopicPartition(topic, 0)  # the brokers' num.partitions: 1
            assert c.assignment() == {tp}
            async with RawProducer(bootstrap, [topic]) as producer:
                await producer.send(tp, [b"right after start"])
            record = await c.getone()
            assert (record.topic, record.offset, record.value) == (topic, 0, b"right after start")


async def test_a_topic_subscribed_after_start_is_picked_up_before_the_periodic_refresh(
    kafka_cluster: Any, cleanup: list[str]
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("later")
    cleanup.append(topic)
    tp = TopicPartition(topic, 0)
    with anyio.fail_after(DEADLINE):
        # metadata_max_age_ms keeps its 5 minutes: the topic must come from the retries
        async with AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as c:
            c.subscribe([topic])
            await eventually(lambda: c.assignment() == {tp})
            async with RawProducer(bootstrap, [topic]) as producer:
                await producer.send(tp, [b"first"])
            record = await c.getone()
            assert (record.topic, record.offset, record.value) == (topic, 0, b"first")


async def test_a_pattern_without_a_group_picks_up_a_new_topic(
    kafka_cluster: Any, admin: AdminClient, cleanup: list[str]
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    prefix = unique("pat")
    topic = f"{prefix}-a"
    cleanup.append(topic)
    tp = TopicPartition(topic, 0)
    with anyio.fail_after(DEADLINE):
        async with AIOKafkaConsumer(
            bootstrap_servers=bootstrap, auto_offset_reset="earliest", metadata_max_age_ms=500
        ) as c:
            c.subscribe(pattern=f"{prefix}-.*")
            assert c.assignment() == frozenset()
            await admin.create_topics([NewTopic(topic, 1, 3)])
            async with RawProducer(bootstrap, [topic]) as producer:
                await producer.send(tp, [b"matched"])
            record = await c.getone()
            assert (record.topic, record.value) == (topic, b"matched")
            assert c.subscription() == {topic}


@pytest.mark.parametrize("group", GROUPS)
async def test_start_raises_for_a_topic_nobody_creates(
    kafka_cluster: Any, admin: AdminClient, group: dict[str, Any]
) -> None:
    """allow_auto_create_topics=False: the topic never comes (as on brokers that create none)."""
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("never")
    if group:
        group = {**group, "group_id": unique("g")}
    c = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, allow_auto_create_topics=False, request_timeout_ms=2000, **group
    )
    with anyio.fail_after(DEADLINE):
        expected = f"'{topic}' not present in metadata after 2000 ms"
        with pytest.raises(UnknownTopicOrPartitionError, match=expected):
            await c.start()
        await c.stop()  # a no-op after the failed start
        assert topic not in await admin.list_topics()
