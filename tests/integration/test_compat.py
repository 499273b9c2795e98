"""The compatibility subset, against each broker version the client supports (the matrix).

Every test runs once per version in ``COMPAT_VERSIONS`` (the harness's
``TESTED_KAFKA_VERSIONS``; ``AIOKAFKA_LEAD_COMPAT_VERSIONS``, comma-separated, overrides
it): the default version uses the session's 3-node cluster (the rest of the suite runs
against it too), the others a 3-node cluster of their own, started from the harness's jars
when the first test needs it and stopped before the next version starts. What each
version must give (``Broker``) is spelled out, so a broker offering less fails, as does one
offering more than the table in docs/protocol.md says.

The subset: the versions negotiated, produce/consume with and without leader moves
(KIP-951 hints, all these brokers being 3.7+), classic groups, KIP-848 groups where the
broker offers them (a clear error where it does not), transactions (TV2 where offered, else
TV1), admin and KIP-207's ListOffsets.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, ConfigResource, NewPartitions, NewTopic, OffsetSpec
from aiokafka_lead.errors import UnsupportedVersionError
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.cluster import DEFAULT_KAFKA_VERSION
from aiokafka_lead.testing.cluster.jars import TESTED_KAFKA_VERSIONS
from aiokafka_lead.testing.leaders import current_leaders, rotate_leadership
from aiokafka_lead.testing.pytest_plugin import versioned_cluster
from tests.integration.conftest import unique
from tests.support.txn import read_committed
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.compat]

_VERSIONS = os.environ.get("AIOKAFKA_LEAD_COMPAT_VERSIONS", ",".join(TESTED_KAFKA_VERSIONS))
COMPAT_VERSIONS = tuple(v.strip() for v in _VERSIONS.split(",") if v.strip())
PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, DELETE_GROUPS = 0, 1, 2, 3, 8, 42
#: what the client negotiates with each release line: (Produce, Fetch, ListOffsets, Metadata, DeleteGroups)
NEGOTIATED = {
    (4, 4): (12, 18, 11, 13, 3),
    (4, 1): (12, 18, 10, 13, 2),
    (3, 9): (11, 17, 9, 12, 2),
}


@dataclass(frozen=True)
class Broker:
    """One version's cluster and what it must give."""

    version: str
    cluster: Any

    @property
    def release(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)

    @property
    def bootstrap(self) -> str:
        return str(self.cluster.bootstrap())

    @property
    def kip848(self) -> bool:
        return self.release >= (4, 0)

    @property
    def transaction_version(self) -> int:
        return 2 if self.release >= (4, 0) else 1

    @property
    def leader_hints(self) -> bool:
        return self.release >= (3, 7)


@pytest.fixture(scope="module", params=COMPAT_VERSIONS, ids=lambda v: f"kafka-{v}")
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    version: str = request.param
    if version == DEFAULT_KAFKA_VERSION:
        yield Broker(version, request.getfixturevalue("kafka_cluster"))
        return
    clusters = versioned_cluster(tmp_path_factory, version)
    try:
        yield Broker(version, next(clusters))
    finally:
        clusters.close()


async def make_topic(broker: Broker, partitions: int) -> str:
    name = unique("compat")
    async with AdminClient(bootstrap_servers=broker.bootstrap) as admin:
        await admin.create_topics([NewTopic(name, partitions, 3)])
    return name


class Reader:
    """Everything a consumer delivered, per partition, in order."""

    def __init__(self, consumer: AIOKafkaConsumer[bytes, bytes]) -> None:
        self.consumer = consumer
        self.seen: dict[int, list[tuple[int, bytes | None]]] = {}

    def count(self) -> int:
        return sum(len(v) for v in self.seen.values())

    async def read_until(self, total: int, seconds: float = 60) -> None:
        with anyio.fail_after(seconds):
            while self.count() < total:
                for tp, records in (await self.consumer.getmany(timeout_ms=500)).items():
                    self.seen.setdefault(tp.partition, []).extend((r.offset, r.value) for r in records)

    def check_exactly(self, values: set[bytes]) -> None:
        """Nothing lost, nothing duplicated: contiguous offsets, every value once."""
        for partition, got in self.seen.items():
            offsets = [o for o, _ in got]
            assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), f"partition {partition}"
        delivered = [v for got in self.seen.values() for _, v in got]
        assert len(delivered) == len(values) and set(delivered) == values


async def test_negotiated_versions_and_features(broker: Broker) -> None:
    async with AdminClient(bootstrap_servers=broker.bootstrap) as admin:
        conn = await admin._core.any_connection()
        table = conn.api_versions
        assert table is not None and table.too_old() is None
        chosen = tuple(table.version_for(k) for k in (PRODUCE, FETCH, LIST_OFFSETS, METADATA, DELETE_GROUPS))
        print(f"Kafka {broker.version}: Produce/Fetch/ListOffsets/Metadata/DeleteGroups v{chosen}")
        assert chosen == NEGOTIATED[broker.release]
        assert table.version_for(OFFSET_COMMIT) == 9
        features = conn.finalized_features
        assert features.get("transaction.version", 0) == (2 if broker.transaction_version == 2 else 0)
        assert (features.get("group.version", 0) >= 1) == broker.kip848


async def test_produce_and_consume_through_leader_moves(broker: Broker) -> None:
    topic = await make_topic(broker, 3)
    tps = [TopicPartition(topic, p) for p in range(3)]
    sent: set[bytes] = set()
    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=200
    )
    async with (
        AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=2) as producer,
        consumer,
        AdminClient(bootstrap_servers=broker.bootstrap) as admin,
    ):
        consumer.assign(tps)
        reader = Reader(consumer)
        with anyio.fail_after(60):
            for i in range(600):
                value = b"before-%05d" % i
                await producer.send(topic, value, partition=i % 3)
                sent.add(value)
            await producer.flush()
        await reader.read_until(len(sent))

        moves = 0

        async def produce_paced() -> None:
            for i in range(1500):
                value = b"moving-%05d" % i
                await producer.send(topic, value, key=b"%d" % i)
                sent.add(value)
                await anyio.sleep(0.002)
            await producer.flush()

        async def move_twice() -> None:
            nonlocal moves
            for _ in range(2):
                await anyio.sleep(0.5)
                with anyio.fail_after(60):
                    moves += len(await rotate_leadership(admin, [topic]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce_paced)
            tg.start_soon(move_twice)
            tg.start_soon(reader.read_until, 2100, 120)
        await reader.read_until(len(sent))
        reader.check_exactly(sent)
        assert moves == 6
        hints = (producer.metrics()["leader_hints_applied"], consumer.metrics()["hints_applied"])
        print(f"Kafka {broker.version}: KIP-951 hints applied by the producer / consumer: {hints}")
        if broker.leader_hints:
            assert hints[0] >= 1 and hints[1] >= 1


async def test_classic_group(broker: Broker) -> None:
    topic = await make_topic(broker, 4)
    group = unique("classic")
    common: dict[str, Any] = {
        "bootstrap_servers": broker.bootstrap,
        "group_id": group,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "fetch_max_wait_ms": 200,
    }
    async with AIOKafkaConsumer(topic, **common) as one, AIOKafkaConsumer(topic, **common) as two:
        with anyio.fail_after(60):
            while not (len(one.assignment()) == 2 and len(two.assignment()) == 2):
                await one.getmany(timeout_ms=100)
                await two.getmany(timeout_ms=100)
        assert one.assignment() | two.assignment() == {TopicPartition(topic, p) for p in range(4)}
        values = {b"g-%04d" % i for i in range(400)}
        async with AIOKafkaProducer(bootstrap_servers=broker.bootstrap) as producer:
            for i, v in enumerate(sorted(values)):
                await producer.send(topic, v, partition=i % 4)
        got: list[bytes] = []
        with anyio.fail_after(60):
            while len(got) < len(values):
                for member in (one, two):
                    for records in (await member.getmany(timeout_ms=100)).values():
                        got.extend(r.value for r in records if r.value is not None)
        assert sorted(got) == sorted(values)
        await one.commit()
        await two.commit()
    async with AdminClient(bootstrap_servers=broker.bootstrap) as admin:
        committed = await admin.list_consumer_group_offsets(group)
        assert {tp.partition: o.offset for tp, o in committed.items()} == dict.fromkeys(range(4), 100)
        [described] = await admin.describe_consumer_groups([group])
        assert described.group_type == "classic" and described.state == "Empty"
        await admin.delete_consumer_groups([group])
        assert group not in {g.group_id for g in await admin.list_consumer_groups()}


async def test_consumer_group_protocol_where_offered(broker: Broker) -> None:
    topic = await make_topic(broker, 4)
    group = unique("kip848")
    common: dict[str, Any] = {
        "bootstrap_servers": broker.bootstrap,
        "group_id": group,
        "group_protocol": "consumer",
        "auto_offset_reset": "earliest",
        "fetch_max_wait_ms": 200,
    }
    if not broker.kip848:
        refused = pytest.raises(UnsupportedVersionError, match="does not speak the consumer group protocol")
        with anyio.fail_after(30), refused:
            async with AIOKafkaConsumer(topic, **common) as consumer:
                while True:
                    await consumer.getmany(timeout_ms=200)
        return
    async with AIOKafkaConsumer(topic, **common) as one, AIOKafkaConsumer(topic, **common) as two:
        with anyio.fail_after(60):
            while not (len(one.assignment()) == 2 and len(two.assignment()) == 2):
                await one.getmany(timeout_ms=100)
                await two.getmany(timeout_ms=100)
        values = {b"c-%04d" % i for i in range(200)}
        async with AIOKafkaProducer(bootstrap_servers=broker.bootstrap) as producer:
            for i, v in enumerate(sorted(values)):
                await producer.send(topic, v, partition=i % 4)
        got: list[bytes] = []
        with anyio.fail_after(60):
            while len(got) < len(values):
                for member in (one, two):
                    for records in (await member.getmany(timeout_ms=100)).values():
                        got.extend(r.value for r in records if r.value is not None)
        assert sorted(got) == sorted(values)
        await one.commit()
        await two.commit()
    async with AdminClient(bootstrap_servers=broker.bootstrap) as admin:
        [described] = await admin.describe_consumer_groups([group])
        assert described.group_type == "consumer"
        committed = await admin.list_consumer_group_offsets(group)
        assert {tp.partition: o.offset for tp, o in committed.items()} == dict.fromkeys(range(4), 50)


async def test_transactions(broker: Broker) -> None:
    topic = await make_topic(broker, 2)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    group = unique("txn-group")
    txn_producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=unique("txn"))
    async with txn_producer as producer:
        assert producer.metrics()["transaction_version"] == broker.transaction_version
        async with producer.transaction():
            for i in range(10):
                await producer.send(topic, b"commit-1-%d" % i, partition=i % 2)
        await producer.begin_transaction()
        for i in range(10):
            await producer.send(topic, b"abort-%d" % i, partition=i % 2)
        await producer.abort_transaction()
        async with producer.transaction():
            for i in range(10):
                await producer.send(topic, b"commit-2-%d" % i, partition=i % 2)
            await producer.send_offsets_to_transaction({tps[0]: 5, tps[1]: 7}, group)
        assert producer.metrics()["transactions_committed"] == 2
        assert producer.metrics()["transactions_aborted"] == 1
    with anyio.fail_after(60):
        seen = await read_committed(broker.bootstrap, tps)
    values = sorted(r.value for records in seen.values() for r in records)
    assert values == sorted([b"commit-1-%d" % i for i in range(10)] + [b"commit-2-%d" % i for i in range(10)])
    async with AdminClient(bootstrap_servers=broker.bootstrap) as admin:
        committed = await admin.list_consumer_group_offsets(group)
        assert {tp.partition: o.offset for tp, o in committed.items()} == {0: 5, 1: 7}


async def test_admin_and_list_offsets_across_a_leader_move(broker: Broker) -> None:
    """Admin calls and KIP-207: LATEST right after a leader election is the log end, never an
    error (OFFSET_NOT_AVAILABLE is retried) and never an older offset."""
    async with AdminClient(bootstrap_servers=broker.bootstrap) as admin:
        cluster = await admin.describe_cluster()
        assert sorted(b.node_id for b in cluster.brokers) == [1, 2, 3]
        name = unique("admin")
        await admin.create_topics([NewTopic(name, 2, 3, topic_configs={"retention.ms": "3600000"})])
        configs = await admin.describe_configs([ConfigResource("topic", name, {"retention.ms": None})])
        assert configs[(2, name)]["retention.ms"].value == "3600000"
        await admin.create_partitions({name: NewPartitions(3)})
        [described] = await admin.describe_topics([name])
        assert len(described.partitions) == 3
        tp = TopicPartition(name, 0)
        # timestamps inside retention: older ones could be deleted by the brokers' retention
        # check while the test runs
        base_ms = int(time.time() * 1000) - 60_000
        async with AIOKafkaProducer(bootstrap_servers=broker.bootstrap) as producer:
            for i in range(100):
                await producer.send(name, b"%d" % i, partition=0, timestamp_ms=base_ms + i)
            await producer.flush()
        offsets = await admin.list_offsets({tp: OffsetSpec.EARLIEST})
        assert offsets[tp].offset == 0
        assert (await admin.list_offsets({tp: base_ms + 50}))[tp].offset == 50
        before = await current_leaders(admin, [name])
        with anyio.fail_after(60):
            await rotate_leadership(admin, [name])
        latest = await admin.list_offsets({tp: OffsetSpec.LATEST})
        assert latest[tp].offset == 100
        assert (await current_leaders(admin, [name]))[tp][1] > before[tp][1]
        low = await admin.delete_records({tp: 40})
        assert low[tp] == 40
        assert (await admin.list_offsets({tp: OffsetSpec.EARLIEST}))[tp].offset == 40
        await admin.delete_topics([name])

        async def gone() -> bool:
            return name not in await admin.list_topics()

        with anyio.fail_after(30):
            await eventually(gone)
