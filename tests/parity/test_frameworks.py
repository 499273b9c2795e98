"""aiokafka's private attributes that frameworks and tracers read (docs/migrating.md,
"Frameworks"), where they need a broker: ``producer.client._wait_on_metadata``,
``producer._partition`` (with the default partitioner and a kafka-python one), a group
member's ``_coordinator.member_id``, ``_group_id``, ``_subscription.topics``, ``_client``.
The ones that need none are compared in tests/unit/test_framework_attributes.py."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.partitioner.default import DefaultPartitioner as KafkaPythonPartitioner

from tests.parity.flavour import Flavour
from tests.parity.harness import Context, scenario

pytestmark = pytest.mark.integration

PLAIN = {"acks": 1, "enable_idempotence": False, "linger_ms": 0}
KEYS = [b"a", b"b", b"key-3", b"\x00", b"a much longer key than the others"]


async def partitions_and_sends(ctx: Context, producer: Any, topic: str) -> None:
    """What ``_partition`` answers per key (and for an explicit partition), and that
    ``send()`` then puts each keyed record there."""
    for key in KEYS:
        predicted = ctx.sync(
            f"_partition(key={key!r})", producer._partition, topic, None, key, b"v", key, b"v"
        )
        sent = await ctx.step(
            f"send(key={key!r})", producer.send_and_wait(topic, b"v", key=key), record=False
        )
        ctx.out(
            f"send(key={key!r}) went to _partition's choice", sent is not None and sent.partition == predicted
        )
    ctx.sync("_partition(partition=2)", producer._partition, topic, 2, None, b"v", None, b"v")
    keyless = producer._partition(topic, None, None, b"v", None, b"v")
    ctx.out("_partition(key=None) is one of the topic's", keyless in (0, 1, 2))


@scenario
async def test_producer_client_and_partition(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic(partitions=3)
    p = ctx.producer(client_id="compat", **PLAIN)
    ctx.out("_closed before start", p._closed)
    await ctx.step("start", p.start())
    ctx.out("client._client_id", p.client._client_id)
    ctx.out("client._bootstrap_servers is the given", p.client._bootstrap_servers == ctx.bootstrap)
    await ctx.step("client._wait_on_metadata(t)", p.client._wait_on_metadata(t))
    await partitions_and_sends(ctx, p, t)
    ctx.out("_closed running", p._closed)
    await ctx.step("stop", p.stop())
    ctx.out("_closed after stop", p._closed)


@scenario
async def test_producer_with_a_kafka_python_partitioner(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic(partitions=3)
    p = ctx.producer(partitioner=KafkaPythonPartitioner(), **PLAIN)
    await ctx.step("start", p.start())
    await ctx.step("client._wait_on_metadata(t)", p.client._wait_on_metadata(t))
    await partitions_and_sends(ctx, p, t)
    await ctx.step("stop", p.stop())


@scenario
async def test_group_member_attributes(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic(partitions=2)
    c = ctx.consumer(t, group_id=ctx.name("g"), client_id="compat", enable_auto_commit=False)
    ctx.out("_group_id", c._group_id)
    ctx.out("_subscription.topics before start", sorted(c._subscription.topics))
    await ctx.step("start", c.start())
    ctx.out("_subscription.topics", sorted(c._subscription.topics))
    # Kafka names a classic member "<client id>-<uuid>"
    ctx.out("_coordinator.member_id is the client id's", c._coordinator.member_id.startswith("compat-"))
    ctx.out("_client._client_id", c._client._client_id)
    ctx.out("_client._bootstrap_servers is the given", c._client._bootstrap_servers == ctx.bootstrap)
    ctx.out("_closed running", c._closed)
    await ctx.step("stop", c.stop())
    ctx.out("_closed after stop", c._closed)
