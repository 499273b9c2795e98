"""Admin client against the real 3-node KRaft cluster."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import (
    AdminClient,
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import (
    InvalidReplicationFactorError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.leaders import current_leaders, rotate_leadership
from tests.integration.conftest import unique
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def kafka_describe_leaders(cluster: Any, topic: str) -> dict[int, int]:
    """Partition -> leader, as Kafka's own TopicCommand --describe prints it."""
    out = cluster.run_tool(
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        cluster.bootstrap(),
        "--describe",
        "--topic",
        topic,
    )
    return {int(p): int(leader) for p, leader in re.findall(r"Partition: (\d+)\s+Leader: (-?\d+)", out)}


async def test_topic_lifecycle(admin: AdminClient) -> None:
    name = unique("life")
    await admin.create_topics([NewTopic(name, 2, 3, topic_configs={"retention.ms": "3600000"})])
    assert name in await admin.list_topics()
    [desc] = await admin.describe_topics([name])
    assert [p.partition for p in desc.partitions] == [0, 1]
    assert all(len(p.replicas) == 3 and p.leader in p.replicas for p in desc.partitions)

    with pytest.raises(TopicAlreadyExistsError, match=name):
        await admin.create_topics([NewTopic(name, 2, 3)])
    with pytest.raises(InvalidReplicationFactorError):
        await admin.create_topics([NewTopic(unique("rf"), 1, 5)])

    await admin.create_partitions({name: NewPartitions(4)})
    [desc] = await admin.describe_topics([name])
    assert len(desc.partitions) == 4

    resource = ConfigResource(ConfigResourceType.TOPIC, name, {"retention.ms": "7200000"})
    await admin.alter_configs([resource])
    # configs reach every broker asynchronously (as with Java's admin): wait with a deadline
    async def applied() -> bool:
        configs = await admin.describe_configs([ConfigResource("topic", name, {"retention.ms": None})])
        return configs[(2, name)]["retention.ms"].value == "7200000"

    with anyio.fail_after(30):
        await eventually(applied)

    await admin.delete_topics([name])
    assert name not in await admin.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError):
        await admin.describe_topics([name])


async def test_a_topics_error_is_the_answer_not_retried(admin: AdminClient) -> None:
    """A per-topic error is the controller's answer: raised at once, naming the topic, not
    retried until the request timeout (40 s here) runs out."""
    gone = unique("gone")
    with anyio.fail_after(10):
        with pytest.raises(UnknownTopicOrPartitionError, match=gone):
            await admin.delete_topics([gone])
        with pytest.raises(UnknownTopicOrPartitionError, match=gone):
            await admin.create_partitions({gone: NewPartitions(2)})


async def test_elect_leaders_moves_leadership_confirmed_by_kafka(
    admin: AdminClient, topic3: str, kafka_cluster: Any
) -> None:
    before = await current_leaders(admin, [topic3])
    with anyio.fail_after(60):
        moved = await rotate_leadership(admin, [topic3])
    after = await current_leaders(admin, [topic3])
    for tp, new_leader in moved.items():
        assert after[tp][0] == new_leader != before[tp][0]
        assert after[tp][1] > before[tp][1]  # the leader epoch advanced
    seen_by_kafka = await anyio.to_thread.run_sync(kafka_describe_leaders, kafka_cluster, topic3)
    assert seen_by_kafka == {tp.partition: leader for tp, leader in moved.items()}
    # a second election is not needed: ELECTION_NOT_NEEDED counts as success
    results = await admin.elect_leaders("preferred", list(moved))
    assert all(r.ok and r.error_code == E.ELECTION_NOT_NEEDED for r in results.values())


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aiokafka_lead.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.security_listeners
async def test_elect_leaders_cli_end_to_end_over_sasl_ssl(
    admin: AdminClient, topic3: str, kafka_cluster: Any
) -> None:
    plan = {}
    for t in await admin.describe_topics([topic3]):
        for p in t.partitions:
            plan[TopicPartition(topic3, p.partition)] = [*p.replicas[1:], p.replicas[0]]
    await admin.alter_partition_reassignments(plan)
    config = kafka_cluster.client_config_file("SASL_SSL", mechanism="SCRAM-SHA-512")
    bootstrap = kafka_cluster.bootstrap("SASL_SSL")

    # conflicting options: a clear error, exit 2, nothing changed
    bad = await anyio.to_thread.run_sync(
        lambda: run_cli(
            "elect-leaders",
            "--bootstrap-server",
            bootstrap,
            "--admin.config",
            str(config),
            "--election-type",
            "preferred",
            "--topic",
            topic3,
            "--partition",
            "0",
            "--all-topic-partitions",
        )
    )
    assert bad.returncode == 2 and "exactly one of" in bad.stderr
    leaders = await current_leaders(admin, [topic3])
    assert any(leaders[tp][0] != replicas[0] for tp, replicas in plan.items())

    ok = await anyio.to_thread.run_sync(
        lambda: run_cli(
            "elect-leaders",
            "--bootstrap-server",
            bootstrap,
            "--admin.config",
            str(config),
            "--election-type",
            "PREFERRED",
            "--topic",
            topic3,
            "--partition",
            "1",
        )
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == f"{topic3}-1: elected preferred leader"
    await admin._core.refresh_metadata("test")
    assert (await current_leaders(admin, [topic3]))[TopicPartition(topic3, 1)][0] == plan[
        TopicPartition(topic3, 1)
    ][0]

    missing = await anyio.to_thread.run_sync(
        lambda: run_cli(
            "elect-leaders",
            "--bootstrap-server",
            bootstrap,
            "--admin.config",
            str(config),
            "--election-type",
            "preferred",
            "--topic",
            "no-such-topic",
            "--partition",
            "0",
        )
    )
    assert missing.returncode == 1 and "no-such-topic-0: FAILED" in missing.stdout


async def test_list_offsets_never_goes_backwards_while_leaders_move(
    admin: AdminClient, topic3: str, kafka_cluster: Any
) -> None:
    """KIP-207: polled in a loop during leader moves, LATEST is monotonic and
    OFFSET_NOT_AVAILABLE never reaches the caller."""
    tps = [TopicPartition(topic3, p) for p in range(3)]
    produce_args = (
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic",
        topic3,
        "--num-records",
        "30000",
        "--record-size",
        "100",
        "--throughput",
        "3000",
        "--producer-props",
        f"bootstrap.servers={kafka_cluster.bootstrap()}",
        "acks=all",
    )
    highest = dict.fromkeys(tps, 0)
    polls = 0
    producer_done = anyio.Event()

    async def produce() -> None:
        await anyio.to_thread.run_sync(lambda: kafka_cluster.run_tool(*produce_args, timeout=180))
        producer_done.set()

    async def poll() -> None:
        nonlocal polls
        while not producer_done.is_set():
            offsets = await admin.list_offsets(dict.fromkeys(tps, OffsetSpec.LATEST), timeout_ms=30_000)
            for tp, info in offsets.items():
                assert info.offset >= highest[tp], f"{tp} went backwards: {info.offset} < {highest[tp]}"
                highest[tp] = info.offset
            polls += 1

    with anyio.fail_after(240):
        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            tg.start_soon(poll)
            for _ in range(3):
                await rotate_leadership(admin, [topic3])
            await producer_done.wait()
    final = await admin.list_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
    assert sum(i.offset for i in final.values()) == 30000
    assert polls > 10
    earliest = await admin.list_offsets(dict.fromkeys(tps, OffsetSpec.EARLIEST))
    assert all(i.offset == 0 for i in earliest.values())
    by_time = await admin.list_offsets(dict.fromkeys(tps, OffsetSpec.MAX_TIMESTAMP))
    assert all(0 <= by_time[tp].offset < final[tp].offset for tp in tps)
