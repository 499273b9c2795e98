"""KIP-714 against a real broker with a client telemetry receiver (tests/integration/telemetry/):
subscriptions set with kafka-client-metrics.sh and through the admin API's client-metrics
resource, the push interval, the
terminating push, a subscription that changes, a payload the broker refuses, a broker without
a receiver, and what librdkafka (confluent-kafka) pushes to the same broker."""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.proto.metrics.v1 import metrics_pb2

from aiokafka_lead.admin import AdminClient, ConfigResource
from aiokafka_lead.consumer import AIOKafkaConsumer
from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.cluster.tools import run_tool
from tests.integration.conftest import unique
from tests.integration.telemetry.receiver import MAX_BYTES, Received, pushes, receiver_cluster
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

PRODUCER = "org.apache.kafka.producer."
INTERVAL_MS = 500
CLIENT_METRICS_COMMAND = "org.apache.kafka.tools.ClientMetricsCommand"  # kafka-client-metrics.sh
DELTA = metrics_pb2.AGGREGATION_TEMPORALITY_DELTA
CUMULATIVE = metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE


@pytest.fixture(scope="module")
def telemetry_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, Path]]:
    cluster, received = receiver_cluster(tmp_path_factory.mktemp("kip714"))
    cluster.up()
    try:
        yield cluster, received
    finally:
        cluster.down()


async def subscribe(bootstrap: str, name: str, metrics: list[str], client_id: str) -> None:
    """A client-metrics subscription (as kafka-client-metrics.sh --alter sets it) for one client id."""
    configs: dict[str, str | None] = {
        "metrics": ",".join(metrics),
        "interval.ms": str(INTERVAL_MS),
        "match": f"client_id={client_id}",
    }
    async with AdminClient(bootstrap_servers=bootstrap, enable_metrics_push=False) as admin:
        await admin.alter_configs([ConfigResource("CLIENT_METRICS", name, configs)])


def subscribe_with_the_tool(cluster: KafkaCluster, name: str, metrics: list[str], client_id: str) -> None:
    """The same with kafka-client-metrics.sh (its class), as an operator does."""
    run_tool(
        cluster.kafka_version,
        CLIENT_METRICS_COMMAND,
        "--alter",
        "--bootstrap-server",
        cluster.bootstrap(),
        "--name",
        name,
        "--metrics",
        ",".join(metrics),
        "--interval",
        str(INTERVAL_MS),
        "--match",
        f"client_id={client_id}",
    )


def decode(data: bytes) -> dict[str, Any]:
    """metric name -> Metric (the first data point's attributes are the metric's)."""
    [rm] = metrics_pb2.MetricsData.FromString(data).resource_metrics
    return {m.name: m for sm in rm.scope_metrics for m in sm.metrics}


def kind(metric: Any) -> str:
    return str(metric.WhichOneof("data"))


def points(metric: Any) -> Any:
    return getattr(metric, kind(metric)).data_points


def attribute_keys(metric: Any) -> set[tuple[str, str]]:
    """The attributes' keys and value types."""
    return {(a.key, a.value.WhichOneof("value")) for p in points(metric) for a in p.attributes}


Cluster = tuple[KafkaCluster, Path]


async def test_subscription_interval_and_terminating_push(telemetry_cluster: Cluster) -> None:
    cluster, received = telemetry_cluster
    client_id = unique("kip714-p")
    metrics = [PRODUCER + "record.send."]
    await anyio.to_thread.run_sync(subscribe_with_the_tool, cluster, unique("sub"), metrics, client_id)
    with anyio.fail_after(60):
        async with AIOKafkaProducer(bootstrap_servers=cluster.bootstrap(), client_id=client_id) as producer:
            instance = await producer.client_instance_id()
            assert isinstance(instance, uuid.UUID)
            for _ in range(3):
                await producer.send_and_wait("kip714", b"x")
            await eventually(lambda: len(pushes(received, instance)) >= 3)
            telemetry = producer._core.telemetry
            assert telemetry is not None and telemetry.subscription is not None
            delta = telemetry.subscription.delta
        got = pushes(received, instance)
    assert [p.terminating for p in got] == [False] * (len(got) - 1) + [True]
    assert {p.client_id for p in got} == {client_id}
    # at the subscription's interval (the broker refuses a push that comes sooner)
    assert all(b.at_ms - a.at_ms >= INTERVAL_MS * 0.8 for a, b in itertools.pairwise(got[:-1]))
    sent = []
    for push in got:
        metrics = decode(push.metrics)
        assert set(metrics) == {PRODUCER + "record.send.total", PRODUCER + "record.send.rate"}
        total = metrics[PRODUCER + "record.send.total"]
        assert kind(total) == "sum" and total.sum.is_monotonic
        temporality = total.sum.aggregation_temporality
        assert temporality == (DELTA if delta else CUMULATIVE)
        assert kind(metrics[PRODUCER + "record.send.rate"]) == "gauge"
        sent.append(points(total)[0].as_int)
    assert (sum(sent) if delta else sent[-1]) == 3


async def test_a_changed_subscription_is_followed(telemetry_cluster: Cluster) -> None:
    cluster, received = telemetry_cluster
    client_id = unique("kip714-c")
    name = unique("sub")
    await subscribe(cluster.bootstrap(), name, [PRODUCER + "record.send.total"], client_id)
    with anyio.fail_after(60):
        async with AIOKafkaProducer(bootstrap_servers=cluster.bootstrap(), client_id=client_id) as producer:
            instance = await producer.client_instance_id()
            await eventually(lambda: len(pushes(received, instance)) >= 1)
            await subscribe(cluster.bootstrap(), name, [PRODUCER + "connection.creation.total"], client_id)

            def changed() -> bool:
                return any(
                    set(decode(p.metrics)) == {PRODUCER + "connection.creation.total"}
                    for p in pushes(received, instance)
                )

            await eventually(changed)
    assert set(decode(pushes(received, instance)[0].metrics)) == {PRODUCER + "record.send.total"}


async def test_an_oversized_payload_is_refused_quietly(
    telemetry_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster, received = telemetry_cluster
    client_id = unique("kip714-big")
    await subscribe(cluster.bootstrap(), unique("sub"), ["*"], client_id)  # every metric: > MAX_BYTES
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(60):
        async with AIOKafkaProducer(bootstrap_servers=cluster.bootstrap(), client_id=client_id) as producer:
            instance = await producer.client_instance_id()
            telemetry = producer._core.telemetry
            assert telemetry is not None
            await eventually(lambda: telemetry.ended is not None)
            await producer.send_and_wait("kip714", b"the application goes on")
    # decompressed, the payload is larger than the broker takes: refused as an invalid record,
    # after which a client pushes no more (as Java's and librdkafka's do)
    assert telemetry.refused == ["INVALID_RECORD"], MAX_BYTES
    assert pushes(received, instance) == []
    ours = [r for r in caplog.records if r.name.startswith("aiokafka_lead")]
    assert not [r for r in ours if r.levelno >= logging.WARNING]


async def test_a_broker_without_a_receiver_gets_nothing(
    kafka_cluster_1: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(60):
        async with AIOKafkaProducer(bootstrap_servers=kafka_cluster_1.bootstrap()) as producer:
            assert await producer.client_instance_id() is None
            telemetry = producer._core.telemetry
            assert telemetry is not None and telemetry.ended is not None
            assert telemetry.pushes == 0
    telemetry_logs = [r for r in caplog.records if r.name.startswith("aiokafka_lead.telemetry")]
    assert telemetry_logs and all(r.levelno == logging.DEBUG for r in telemetry_logs)


def compare(ours: list[Received], theirs: list[Received]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every metric in our pushes (the terminating one left out) and in librdkafka's; those
    both push have the same type (gauge or sum) and attribute keys and value types."""
    assert theirs, "librdkafka pushed nothing"
    our_metrics = {n: m for p in ours[:-1] for n, m in decode(p.metrics).items()}
    their_metrics = {n: m for p in theirs for n, m in decode(p.metrics).items()}
    both = set(our_metrics) & set(their_metrics)
    assert both, (sorted(our_metrics), sorted(their_metrics))
    for name in sorted(both):
        assert kind(our_metrics[name]) == kind(their_metrics[name]), name
        assert attribute_keys(our_metrics[name]) == attribute_keys(their_metrics[name]), name
    return our_metrics, their_metrics


def pushed_by(received: Path, client_id: str) -> list[Received]:
    return [p for p in pushes(received) if p.client_id == client_id]


def librdkafka_pushes(bootstrap: str, client_id: str, received: Path) -> list[Received]:
    """What a confluent-kafka producer pushes (runs in a worker thread: librdkafka's calls block)."""
    import time

    from confluent_kafka import Producer

    config = {"bootstrap.servers": bootstrap, "client.id": client_id, "enable.metrics.push": True}
    producer = Producer(config)
    for _ in range(3):
        producer.produce("kip714", b"x")
    producer.flush(10)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(pushed_by(received, client_id)) < 2:
        producer.poll(0.1)
    producer.flush(10)
    return pushed_by(received, client_id)


async def test_the_metrics_both_push_have_librdkafkas_names_types_and_tags(
    telemetry_cluster: Cluster,
) -> None:
    cluster, received = telemetry_cluster
    ours_id, theirs_id = unique("kip714-ours"), unique("kip714-rdk")
    # what librdkafka 2.x pushes for a producer; both clients subscribed to the same prefixes
    suffixes = ("connection.creation.", "node.request.latency.", "produce.throttle.time.")
    shared = [PRODUCER + s for s in (*suffixes, "record.queue.time.")]
    for client_id in (ours_id, theirs_id):
        await subscribe(cluster.bootstrap(), unique("sub"), shared, client_id)
    with anyio.fail_after(90):
        async with AIOKafkaProducer(bootstrap_servers=cluster.bootstrap(), client_id=ours_id) as producer:
            instance = await producer.client_instance_id()
            for _ in range(3):
                await producer.send_and_wait("kip714", b"x")
            await eventually(lambda: len(pushes(received, instance)) >= 2)
            bootstrap = cluster.bootstrap()
            theirs = await anyio.to_thread.run_sync(librdkafka_pushes, bootstrap, theirs_id, received)
    our_metrics, their_metrics = compare(pushes(received, instance), theirs)
    # every metric librdkafka pushes for these prefixes, we push too
    assert set(their_metrics) <= set(our_metrics), sorted(set(their_metrics) - set(our_metrics))


CONSUMER = "org.apache.kafka.consumer."


def librdkafka_consumer_pushes(bootstrap: str, client_id: str, topic: str, received: Path) -> list[Received]:
    """What a confluent-kafka group consumer pushes (in a worker thread: its calls block)."""
    import time

    from confluent_kafka import Consumer

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "group.id": client_id,
        "auto.offset.reset": "earliest",
        "enable.metrics.push": True,
    })  # fmt: skip
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and len(pushed_by(received, client_id)) < 2:
            consumer.poll(0.1)
    finally:
        consumer.close()
    return pushed_by(received, client_id)


async def test_consumer_metrics_both_push_have_librdkafkas_names_types_and_tags(
    telemetry_cluster: Cluster,
) -> None:
    cluster, received = telemetry_cluster
    ours_id, theirs_id = unique("kip714-cours"), unique("kip714-crdk")
    topic = unique("kip714c")
    suffixes = ("connection.creation.", "node.request.latency.", "coordinator.", "fetch.manager.fetch.")
    shared = [CONSUMER + s for s in suffixes]
    for client_id in (ours_id, theirs_id):
        await subscribe(cluster.bootstrap(), unique("sub"), shared, client_id)
    bootstrap = cluster.bootstrap()
    with anyio.fail_after(90):
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, enable_metrics_push=False) as producer:
            await producer.send_and_wait(topic, b"x")
        async with AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            client_id=ours_id,
            group_id=ours_id,
            auto_offset_reset="earliest",
        ) as consumer:
            instance = await consumer.client_instance_id()
            await consumer.getone()
            before = len(pushes(received, instance))  # some went while start() joined the group
            await eventually(lambda: len(pushes(received, instance)) >= before + 2)
        rdk = librdkafka_consumer_pushes
        theirs = await anyio.to_thread.run_sync(rdk, bootstrap, theirs_id, topic, received)
    our_metrics, their_metrics = compare(pushes(received, instance), theirs)
    assert CONSUMER + "coordinator.assigned.partitions" in set(our_metrics) & set(their_metrics)
    # librdkafka pushes an average of nothing as 0, we leave it out (Java's NaN): no commit yet
    nothing_yet = {CONSUMER + "coordinator.commit.latency.avg", CONSUMER + "coordinator.commit.latency.max"}
    assert set(their_metrics) - set(our_metrics) <= nothing_yet, sorted(set(their_metrics) - set(our_metrics))
