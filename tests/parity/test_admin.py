"""AIOKafkaAdminClient scenarios: aiokafka's return shapes (protocol responses, dicts,
tuples) and errors, for every method of its admin client.

Replica placement and leaders are the cluster's choice, so partitions are recorded with
sorted replica lists and whether the leader is one of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.parity.flavour import Flavour
from tests.parity.harness import Context, scenario

pytestmark = pytest.mark.integration

NODES = [1, 2, 3]


def new_topic_name(ctx: Context, key: str) -> str:
    """A topic name the scenario creates itself (deleted with the suite's topics)."""
    name = ctx.name(key, "t")
    ctx.setup.created_topics.append(name)
    return name


async def until(what: Callable[[], Awaitable[Any]], done: Callable[[Any], bool]) -> Any:
    """``await what()`` until ``done(result)``: aiokafka's admin does not wait for brokers
    to learn a change, and asks a random broker (bounded by the step's limit)."""
    while True:
        result = await what()
        if done(result):
            return result
        await asyncio.sleep(0.1)


def topic_shape(described: dict[str, Any]) -> Any:
    """A describe_topics entry with the cluster's choices (placement, leaders) factored out."""
    partitions = sorted(described.get("partitions", []), key=lambda p: p["partition"])
    return (
        sorted(described),
        {k: v for k, v in described.items() if k != "partitions"},
        [
            (
                sorted(p),
                p["error_code"],
                p["partition"],
                p["leader"] in p["replicas"],
                sorted(p["replicas"]),
                sorted(p["isr"]),
                p["offline_replicas"],
            )
            for p in partitions
        ],
    )


@scenario
async def test_create_topics_response(f: Flavour, ctx: Context) -> None:
    NewTopic = f.admin.NewTopic
    a, b, c = (new_topic_name(ctx, k) for k in "abc")
    admin = ctx.admin_client()
    await ctx.step("start", admin.start())
    await ctx.step("create_topics", admin.create_topics([NewTopic(a, 2, 3)]))
    await ctx.step(
        "create_topics with configs and assignments",
        admin.create_topics(
            [
                NewTopic(b, 1, 3, topic_configs={"retention.ms": "3600000"}),
                NewTopic(c, -1, -1, replica_assignments={0: [1, 2], 1: [2, 3]}),
            ]
        ),
    )
    await ctx.step("create_topics again: TOPIC_ALREADY_EXISTS", admin.create_topics([NewTopic(a, 2, 3)]))
    await ctx.step(
        "create_topics validate_only",
        admin.create_topics([NewTopic(new_topic_name(ctx, "v"), 1, 1)], validate_only=True),
    )
    await ctx.step(
        "create_topics replication 7 of 3 brokers",
        admin.create_topics([NewTopic(new_topic_name(ctx, "rf"), 1, 7)]),
    )
    await ctx.step(
        "create_topics 0 partitions", admin.create_topics([NewTopic(new_topic_name(ctx, "z"), 0, 1)])
    )
    await ctx.step("create_topics bad name", admin.create_topics([NewTopic("bad name!", 1, 1)]))
    mine = {a, b, c}
    listed = await ctx.step(
        "list_topics", until(admin.list_topics, lambda got: mine <= set(got)), record=False
    )
    ctx.out(
        "list_topics: a list with the created topics (not the validate_only one)",
        (type(listed).__name__, sorted(mine & set(listed or ()))),
    )
    described = await ctx.step(
        "describe_topics",
        until(lambda: admin.describe_topics([c]), lambda got: len(got[0]["partitions"]) == 2),
        record=False,
    )
    ctx.out("describe_topics of the assigned topic", [topic_shape(d) for d in described or ()])
    ctx.sync("NewTopic with partitions and assignments", NewTopic, "x", 1, 1, replica_assignments={0: [1]})
    ctx.sync(
        "NewTopic attributes",
        lambda: (NewTopic("x", 1, 1).replica_assignments, NewTopic("x", 1, 1).topic_configs),
    )
    await ctx.step("close", admin.close())
    await ctx.step("close again", admin.close())


@scenario
async def test_delete_topics_response(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    admin = ctx.admin_client()
    await admin.start()
    await ctx.step("delete_topics", admin.delete_topics([t]))
    await ctx.step("delete_topics again: UNKNOWN_TOPIC_OR_PARTITION", admin.delete_topics([t]))
    await ctx.step(
        "list_topics stops listing it", until(admin.list_topics, lambda got: t not in got), record=False
    )


@scenario
async def test_describe_topics_and_cluster(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic(partitions=2)
    admin = ctx.admin_client()
    await admin.start()
    described = await ctx.step("describe_topics([t])", admin.describe_topics([t]), record=False)
    ctx.out("describe_topics([t])", (type(described).__name__, [topic_shape(d) for d in described or ()]))
    everything = await ctx.step("describe_topics()", admin.describe_topics(), record=False)
    ctx.out(
        "describe_topics() has the topic", [topic_shape(d) for d in everything or () if d.get("topic") == t]
    )
    cluster = await ctx.step("describe_cluster", admin.describe_cluster(), record=False)
    if cluster is not None:
        ports = {int(a.rsplit(":", 1)[1]) for a in ctx.bootstrap.split(",")}
        ctx.out("describe_cluster keys", (type(cluster).__name__, sorted(cluster)))
        ctx.out(
            "describe_cluster brokers",
            [
                (sorted(b), b["node_id"], b["port"] in ports, b["rack"])
                for b in sorted(cluster["brokers"], key=lambda b: b["node_id"])
            ],
        )
        ctx.out(
            "describe_cluster ids",
            (
                type(cluster["cluster_id"]).__name__,
                cluster["controller_id"] in NODES,
                cluster["throttle_time_ms"],
            ),
        )
    # aiokafka's find_coordinator does not retry: on a cluster whose offsets topic is not
    # there yet it raises GroupCoordinatorNotAvailableError, so a member creates it first
    group = ctx.name("g")
    await ctx.member(t, group)
    coordinator = await ctx.step("find_coordinator", admin.find_coordinator(group), record=False)
    ctx.out("find_coordinator is a node id", (type(coordinator).__name__, coordinator in NODES))
    # last: aiokafka's Metadata request lets the broker auto-create the topic it names
    await ctx.step("describe_topics(unknown)", admin.describe_topics([new_topic_name(ctx, "unknown")]))


@scenario
async def test_create_partitions(f: Flavour, ctx: Context) -> None:
    NewPartitions = f.admin.NewPartitions
    t = await ctx.topic()
    admin = ctx.admin_client()
    await admin.start()
    await ctx.step("create_partitions", admin.create_partitions({t: NewPartitions(3)}))
    described = await ctx.step(
        "describe_topics shows 3 partitions",
        until(lambda: admin.describe_topics([t]), lambda got: len(got[0]["partitions"]) == 3),
        record=False,
    )
    ctx.out(
        "partitions after", sorted(p["partition"] for p in described[0]["partitions"]) if described else None
    )
    await ctx.step(
        "create_partitions validate_only", admin.create_partitions({t: NewPartitions(4)}, validate_only=True)
    )
    await ctx.step(
        "create_partitions with assignments", admin.create_partitions({t: NewPartitions(4, [[1, 2, 3]])})
    )
    await ctx.step("create_partitions shrinking", admin.create_partitions({t: NewPartitions(2)}))
    await ctx.step(
        "create_partitions unknown topic",
        admin.create_partitions({new_topic_name(ctx, "none"): NewPartitions(2)}),
    )


@scenario
async def test_describe_configs(f: Flavour, ctx: Context) -> None:
    ConfigResource = f.config_resource.ConfigResource
    ConfigResourceType = f.config_resource.ConfigResourceType
    t = await ctx.topic(configs={"retention.ms": "3600000"})
    admin = ctx.admin_client()
    await admin.start()
    wanted = {"retention.ms": None, "cleanup.policy": None}
    await ctx.step(
        "describe_configs topic, two keys",
        admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t, wanted)]),
    )
    everything = await ctx.step(
        "describe_configs topic, all", admin.describe_configs([ConfigResource("topic", t)]), record=False
    )
    if everything:
        [response] = everything
        [(code, message, kind, name, entries)] = response.resources
        ctx.out("all: resource", (code, message, kind, name, len(entries) > 20, len(entries[0])))
    await ctx.step(
        "describe_configs broker and topic",
        admin.describe_configs(
            [
                ConfigResource(ConfigResourceType.TOPIC, t, {"retention.ms": None}),
                ConfigResource(ConfigResourceType.BROKER, "1", {"num.io.threads": None}),
            ]
        ),
    )
    await ctx.step(
        "describe_configs include_synonyms",
        admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t, {"retention.ms": None})], include_synonyms=True
        ),
    )
    await ctx.step(
        "describe_configs unknown topic",
        admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, new_topic_name(ctx, "none"), wanted)]
        ),
    )
    ctx.sync("ConfigResource('topic', name).resource_type", lambda: ConfigResource("topic", t).resource_type)
    ctx.sync("ConfigResource('nope', name)", ConfigResource, "nope", t)


@scenario
async def test_alter_configs(f: Flavour, ctx: Context) -> None:
    ConfigResource = f.config_resource.ConfigResource
    ConfigResourceType = f.config_resource.ConfigResourceType
    t = await ctx.topic()
    admin = ctx.admin_client()
    await admin.start()
    keys = {"retention.ms": None, "cleanup.policy": None, "max.message.bytes": None}

    def value_of(key: str, value: str) -> Callable[[Any], bool]:
        def done(got: Any) -> bool:
            entries = got[0].resources[0][4]
            return any(e[0] == key and e[1] == value for e in entries)

        return done

    def describe() -> Awaitable[Any]:
        return admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t, keys)])

    await ctx.step(
        "alter_configs",
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, t, {"retention.ms": "100000"})]),
    )
    await ctx.step("describe after", until(describe, value_of("retention.ms", "100000")))
    # AlterConfigs (not the incremental one) replaces the resource's whole configuration
    await ctx.step(
        "alter_configs another key",
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, t, {"max.message.bytes": "2000"})]),
    )
    await ctx.step("describe after the second alter", until(describe, value_of("max.message.bytes", "2000")))
    await ctx.step(
        "alter_configs unknown key",
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, t, {"no.such.config": "1"})]),
    )
    await ctx.step(
        "alter_configs bad value",
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, t, {"retention.ms": "soon"})]),
    )


@scenario
async def test_consumer_groups(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic(partitions=2)
    await ctx.fill(t, [(0, None, b"a"), (0, None, b"b"), (0, None, b"c"), (1, None, b"d")])
    group = ctx.name("g")
    await ctx.member(t, group, read=4)
    admin = ctx.admin_client()
    await admin.start()
    listed = await ctx.step("list_consumer_groups", admin.list_consumer_groups(), record=False)
    ctx.out(
        "list_consumer_groups: our group", (type(listed).__name__, [g for g in listed or () if g[0] == group])
    )
    described = await ctx.step(
        "describe_consumer_groups", admin.describe_consumer_groups([group]), record=False
    )
    if described:
        [response] = described
        ctx.out(
            "describe_consumer_groups: response fields",
            sorted(k for k in vars(response) if not k.startswith("_")),
        )
        [row] = response.groups
        code, name, state, protocol_type, protocol, members = row
        [member] = members
        ctx.out(
            "group row", (len(row), code, name, state, protocol_type, protocol, len(members), len(member))
        )
        member_id, client_id, client_host, metadata, assignment = member
        ctx.out(
            "member",
            (
                member_id.startswith(client_id),
                client_host,
                type(metadata).__name__,
                type(assignment).__name__,
            ),
        )
    await ctx.step("describe_consumer_groups(unknown)", admin.describe_consumer_groups([ctx.name("none")]))
    _tp0, tp1, tp9 = (f.structs.TopicPartition(t, p) for p in (0, 1, 9))
    await ctx.step("list_consumer_group_offsets", admin.list_consumer_group_offsets(group))
    await ctx.step(
        "list_consumer_group_offsets(partitions=[tp1, tp9])",
        admin.list_consumer_group_offsets(group, partitions=[tp1, tp9]),
    )
    coordinator = await admin.find_coordinator(group)
    await ctx.step(
        "list_consumer_group_offsets(group, coordinator)",
        admin.list_consumer_group_offsets(group, coordinator),
    )
    await ctx.step(
        "list_consumer_group_offsets(unknown)", admin.list_consumer_group_offsets(ctx.name("none2"))
    )


@scenario
async def test_delete_records(f: Flavour, ctx: Context) -> None:
    RecordsToDelete = f.admin.RecordsToDelete
    t = await ctx.topic(partitions=2)
    await ctx.fill(t, [(0, None, b"v%d" % i) for i in range(4)])
    tp0, tp1 = (f.structs.TopicPartition(t, p) for p in (0, 1))
    admin = ctx.admin_client()
    await admin.start()
    await ctx.step("delete_records", admin.delete_records({tp0: RecordsToDelete(2), tp1: RecordsToDelete(0)}))
    await ctx.step("delete_records to the end", admin.delete_records({tp0: RecordsToDelete(4)}))
    await ctx.step("delete_records beyond the end", admin.delete_records({tp0: RecordsToDelete(9)}))
    c = ctx.consumer(enable_auto_commit=False)
    await c.start()
    await ctx.step("beginning_offsets after", c.beginning_offsets([tp0, tp1]))
    await ctx.step(
        "delete_records unknown partition",
        admin.delete_records({f.structs.TopicPartition(t, 5): RecordsToDelete(1)}),
    )
    unknown = f.structs.TopicPartition(new_topic_name(ctx, "none"), 0)
    await ctx.step("delete_records unknown topic", admin.delete_records({unknown: RecordsToDelete(1)}))
