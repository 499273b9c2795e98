"""KIP-392 fetch from follower against real brokers: three nodes in racks a, b and c with
``RackAwareReplicaSelector``; a consumer in rack b reads a topic whose leaders are in racks a
and c from rack b's broker, loses and duplicates nothing, and when that broker is stopped
goes on reading from the leaders within one request timeout (stopped gracefully, or killed)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.cluster import KafkaCluster
from tests.integration.conftest import unique
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

RACKS = {1: "a", 2: "b", 3: "c"}
RACK_B_NODE = 2
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
REQUEST_TIMEOUT_MS = 10_000
VALUE_PAD = b"." * 200


@pytest.fixture(scope="module")
def racked_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(
        tmp_path_factory.mktemp("kafka-racks"),
        3,
        profile="testing",
        extra_properties={"replica.selector.class": SELECTOR},
        node_properties={node: {"broker.rack": rack} for node, rack in RACKS.items()},
        stop_at_exit=True,
    )
    cluster.up(timeout=120)
    try:
        yield cluster
    finally:
        cluster.down()


def value(i: int) -> bytes:
    return b"%08d" % i + VALUE_PAD


class Reader:
    """A rack-b consumer of both partitions, keeping every record it got."""

    def __init__(self, consumer: AIOKafkaConsumer[bytes, bytes]) -> None:
        self.consumer = consumer
        self.seen: dict[int, list[tuple[int, bytes]]] = {0: [], 1: []}
        self.arrivals: list[float] = []

    async def read(self, until: Any, deadline: float) -> None:
        with anyio.fail_after(deadline):
            while not until():
                batch = await self.consumer.getmany(timeout_ms=500)
                if batch:
                    self.arrivals.append(time.monotonic())
                for tp, records in batch.items():
                    self.seen[tp.partition].extend((r.offset, r.value) for r in records)

    def count(self) -> int:
        return sum(len(v) for v in self.seen.values())

    def leader_bytes(self) -> int:
        by_node = self.consumer.metrics()["bytes_fetched_by_node"]
        return sum(n for node, n in by_node.items() if node != RACK_B_NODE)


@pytest.mark.parametrize("how", ["stop", "kill"])
async def test_rack_b_consumer_reads_from_rack_b_and_survives_its_broker_stopping(
    racked_cluster: KafkaCluster, how: str
) -> None:
    """``stop``: SIGTERM (controlled shutdown); ``kill``: SIGKILL."""
    if not racked_cluster.is_running(RACK_B_NODE):
        await anyio.to_thread.run_sync(racked_cluster.start_node, RACK_B_NODE)
    bootstrap = racked_cluster.bootstrap()
    topic = unique("racks")
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        # leaders: partition 0 on node 1 (rack a), partition 1 on node 3 (rack c)
        await admin.create_topics([NewTopic(topic, replica_assignments={0: [1, 2, 3], 1: [3, 2, 1]})])
    sent = 0
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5) as producer:
        with anyio.fail_after(60):
            await producer.partitions_for(topic)
            leaders = {p: producer._core.store.leader_for(tp) for p, tp in enumerate(tps)}
            assert {p: n.node_id for p, n in leaders.items() if n is not None} == {0: 1, 1: 3}
            handles = [await producer.send(topic, value(i), partition=i % 2) for i in range(10_000)]
            for h in handles:
                await h
            sent = 10_000

        consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            client_rack="b",
            auto_offset_reset="earliest",
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            fetch_max_wait_ms=200,
        )
        async with consumer:
            consumer.assign(tps)
            reader = Reader(consumer)
            # 1. everything from rack b's broker
            await reader.read(lambda: reader.count() >= sent, 60)
            metrics = consumer.metrics()
            by_node = metrics["bytes_fetched_by_node"]
            share = by_node.get(RACK_B_NODE, 0) / sum(by_node.values())
            print(f"KIP-392: bytes fetched by node {dict(by_node)}; rack b's share {share:.4f}")
            assert share >= 0.95
            assert metrics["preferred_read_replicas"] == {tps[0]: RACK_B_NODE, tps[1]: RACK_B_NODE}

            # 2. rack b's broker stops while records keep coming: the leaders take over.
            # acks=1, so producing does not wait for the lost replica to leave the ISR (a
            # killed one stays for the broker session timeout): the consumer is measured.
            enough = anyio.Event()
            leader_acks = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, enable_idempotence=False)

            async def produce_more() -> None:
                nonlocal sent
                async with leader_acks:
                    while not enough.is_set():
                        await leader_acks.send_and_wait(topic, value(sent), partition=sent % 2)
                        sent += 1
                        await anyio.sleep(0.005)

            async with anyio.create_task_group() as tg:
                tg.start_soon(produce_more)
                # a fixed mark: "caught up with a producer that keeps going" is a race
                with anyio.fail_after(30):
                    await eventually(lambda: sent > 10_100)
                steady = sent
                await reader.read(lambda: reader.count() >= steady, 30)
                leader_bytes_before = reader.leader_bytes()
                stopped_at = time.monotonic()
                stopping = anyio.Event()

                async def stop_rack_b() -> None:
                    halt = racked_cluster.stop_node if how == "stop" else racked_cluster.kill_node
                    await anyio.to_thread.run_sync(halt, RACK_B_NODE)
                    stopping.set()

                tg.start_soon(stop_rack_b)
                def took_over() -> bool:
                    return reader.leader_bytes() > leader_bytes_before

                await reader.read(took_over, REQUEST_TIMEOUT_MS / 1000)
                from_leader_after = time.monotonic() - stopped_at
                with anyio.fail_after(60):
                    await stopping.wait()
                mark = sent
                await reader.read(lambda: reader.count() >= mark, 30)
                enough.set()
            await reader.read(lambda: reader.count() >= sent, 30)
            arrivals = reader.arrivals
            gaps = [b - a for a, b in itertools.pairwise(arrivals) if a >= stopped_at - 1]
            stall = max(gaps, default=0.0)
            fallbacks = consumer.metrics()["read_replica_fallbacks"]
            print(
                f"KIP-392: rack b's broker {how}: first bytes from a leader after "
                f"{from_leader_after:.2f}s, longest gap between records {stall:.2f}s; fallbacks {fallbacks}"
            )
            # A killed replica stays in the ISR until its broker session times out, and until
            # then the leaders' high watermark (what any consumer may read) stands still: the
            # longest gap then measures the broker, not the client.
            assert from_leader_after < REQUEST_TIMEOUT_MS / 1000
            assert consumer.metrics()["preferred_read_replicas"] == {}

    # 3. nothing lost, nothing duplicated: every partition's offsets are 0..n-1 once each,
    # and every value sent is there exactly once
    offsets = {p: [o for o, _ in reader.seen[p]] for p in (0, 1)}
    for p in (0, 1):
        assert offsets[p] == list(range(len(offsets[p]))), f"partition {p}: gaps or duplicates"
    values = sorted(v for p in (0, 1) for _, v in reader.seen[p])
    assert values == sorted(value(i) for i in range(sent))
