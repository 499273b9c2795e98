"""Consumer scenarios on topics that do not exist yet: a subscription that makes the brokers
create its topic, a pattern that matches a topic made later, and brokers that create no
topic at all (auto.create.topics.enable=false, on a one-node cluster of their own)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from aiokafka_lead.testing.cluster.cluster import KafkaCluster
from tests.parity.flavour import Flavour
from tests.parity.harness import Context, run_parity

pytestmark = pytest.mark.integration

#: every wait of a start() that cannot succeed (aiokafka waits request_timeout_ms too)
SHORT_TIMEOUT = {"request_timeout_ms": 2000}


def missing_topic(ctx: Context) -> str:
    """A name no topic has yet (deleted at the end of the suite if the brokers create it)."""
    name = ctx.name("new", "t")
    ctx.setup.created_topics.append(name)
    return name


def record(r: Any) -> tuple[str, int, int, bytes]:
    return (r.topic, r.partition, r.offset, r.value)


@pytest.mark.parametrize("group", [False, True], ids=["no-group", "group"])
def test_subscribe_to_a_missing_topic_then_send_then_getone(
    kafka_cluster: Any, parity_created_topics: list[str], group: bool
) -> None:
    async def send_right_after_start(f: Flavour, ctx: Context) -> None:
        topic = missing_topic(ctx)
        kwargs: dict[str, Any] = {}
        if group:
            kwargs.update(group_id=ctx.name("g"), enable_auto_commit=False)
        c = ctx.consumer(topic, **kwargs)
        await ctx.step("start", c.start())
        ctx.sync("assignment after start", lambda: sorted(c.assignment()))
        # aiokafka's start() may return before "latest" is resolved: a send before that
        # would not be read (ours resolves it inside start())
        await ctx.step("position", c.position(f.structs.TopicPartition(topic, 0)))
        await ctx.fill(topic, [(0, None, b"right after start")])
        r = await ctx.step("getone", c.getone(), record=False)
        ctx.out("getone", None if r is None else record(r))

    key = f"subscribe-to-a-missing-topic-then-send-then-getone-{'group' if group else 'no-group'}"
    run_parity(send_right_after_start, kafka_cluster, parity_created_topics, key)


@pytest.mark.parametrize("group", [False, True], ids=["no-group", "group"])
def test_pattern_picks_up_a_topic_made_later(
    kafka_cluster: Any, parity_created_topics: list[str], group: bool
) -> None:
    async def pattern_picks_up(f: Flavour, ctx: Context) -> None:
        base = ctx.name("pat", "t")
        kwargs: dict[str, Any] = {"auto_offset_reset": "earliest", "metadata_max_age_ms": 500}
        if group:
            kwargs.update(group_id=ctx.name("g"), enable_auto_commit=False)
        c = ctx.consumer(**kwargs)
        await ctx.step("start", c.start())
        ctx.sync("subscribe(pattern=...)", c.subscribe, pattern=re.escape(base) + "-.*")
        ctx.sync("assignment before the topic", lambda: sorted(c.assignment()))
        topic = await ctx.topic("a", concrete=base + "-a")
        await ctx.fill(topic, [(0, None, b"matched")])
        r = await ctx.step("getone", c.getone(), record=False)
        ctx.out("getone", None if r is None else record(r))
        ctx.sync("subscription()", c.subscription)
        ctx.sync("assignment", lambda: sorted(c.assignment()))

    key = f"pattern-picks-up-a-topic-made-later-{'group' if group else 'no-group'}"
    run_parity(pattern_picks_up, kafka_cluster, parity_created_topics, key)


@pytest.fixture(scope="module")
def no_auto_create_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One node whose brokers never create a topic for a Metadata request."""
    cluster = KafkaCluster(
        tmp_path_factory.mktemp("kafka-no-auto-create"),
        1,
        profile="testing",
        extra_properties={"auto.create.topics.enable": "false"},
        stop_at_exit=True,
    )
    cluster.up(timeout=120)
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.mark.parametrize("group", [False, True], ids=["no-group", "group"])
def test_start_on_a_missing_topic_the_brokers_do_not_create(
    no_auto_create_cluster: KafkaCluster, group: bool
) -> None:
    async def start_raises(f: Flavour, ctx: Context) -> None:
        kwargs: dict[str, Any] = dict(SHORT_TIMEOUT)
        if group:
            kwargs.update(group_id=ctx.name("g"), enable_auto_commit=False)
        c = ctx.consumer(ctx.name("never", "t"), **kwargs)
        await ctx.step("start", c.start())
        await ctx.step("stop", c.stop())

    key = f"start-on-a-missing-topic-the-brokers-do-not-create-{'group' if group else 'no-group'}"
    run_parity(start_raises, no_auto_create_cluster, [], key)
