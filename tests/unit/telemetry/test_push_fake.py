"""KIP-714 pushes against the fake cluster's receiver: subscription, interval, temporality,
compression, the terminating push, a changed subscription, refusals, no receiver."""

from __future__ import annotations

import itertools
import logging
import time
import uuid
from typing import Any

import anyio
import pytest
from opentelemetry.proto.metrics.v1 import metrics_pb2

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.protocol.messages import GetTelemetrySubscriptionsResponse
from aiokafka_lead.records.compression import CompressionType
from aiokafka_lead.telemetry.names import MetricName
from aiokafka_lead.telemetry.push import MIN_RETRY_S, TERMINATING_PUSH_S, telemetry_name
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Drop, Respond
from aiokafka_lead.testing.fake.telemetry import FakeTelemetry, Push
from tests.support.waiting import eventually

GET_SUBSCRIPTIONS, PUSH = 71, 72
PRODUCER = "org.apache.kafka.producer."


def decode(push: Push) -> dict[str, Any]:
    """metric name -> its Metric message."""
    data = metrics_pb2.MetricsData.FromString(push.metrics)
    [rm] = data.resource_metrics
    [sm] = rm.scope_metrics
    out: dict[str, Any] = {}
    for m in sm.metrics:
        points = m.sum.data_points if m.HasField("sum") else m.gauge.data_points
        first = points[0].attributes
        attrs = tuple(sorted((a.key, a.value.string_value or a.value.int_value) for a in first))
        out[m.name if not attrs else f"{m.name}{attrs}"] = m
    return out


def resource(push: Push) -> dict[str, str]:
    data = metrics_pb2.MetricsData.FromString(push.metrics)
    return {a.key: a.value.string_value for a in data.resource_metrics[0].resource.attributes}


def value(metric: Any) -> float:
    point = (metric.sum if metric.HasField("sum") else metric.gauge).data_points[0]
    return point.as_int if point.HasField("as_int") else point.as_double


def test_names_follow_javas_convention() -> None:
    tags = (("client-id", "x"), ("node-id", "node-1"))
    name = MetricName("request-latency-avg", "producer-node-metrics", tags)
    assert telemetry_name(name) == "org.apache.kafka.producer.node.request.latency.avg"
    fetch = MetricName("fetch-latency-max", "consumer-fetch-manager-metrics", (("client-id", "x"),))
    assert telemetry_name(fetch) == "org.apache.kafka.consumer.fetch.manager.fetch.latency.max"


async def test_pushes_what_the_subscription_asks_at_its_interval() -> None:
    telemetry = FakeTelemetry(prefixes=[PRODUCER + "record.", PRODUCER + "node."], interval_ms=100)
    with anyio.fail_after(20):
        async with FakeCluster(brokers=1, telemetry=telemetry) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            producer = AIOKafkaProducer(bootstrap_servers=fc.bootstrap, transactional_id=None)
            async with producer:
                for _ in range(3):
                    await producer.send_and_wait("t", b"x", partition=0)
                await fc.wait_for(lambda: len(telemetry.pushes) >= 3)
                instance = await producer.client_instance_id()
            pushes = list(telemetry.pushes)
            times = [r.time for r in fc.requests.select(PUSH)]
    assert telemetry.instances == [instance]
    assert {p.client_instance_id for p in pushes} == {instance}
    assert all(p.compression_type == CompressionType.ZSTD for p in pushes)  # the first the broker accepts
    assert [p.terminating for p in pushes] == [False] * (len(pushes) - 1) + [True]
    # at the interval (the first one after a random 0.5-1.5 of it)
    assert all(b - a >= 0.09 for a, b in itertools.pairwise(times[:-1]))
    last = decode(pushes[-2])
    assert set(n.split("(")[0] for n in last) <= {
        n for n in (PRODUCER + s for s in ("record.send.total", "record.send.rate", "record.error.total",
                                            "record.error.rate", "record.retry.total", "record.retry.rate",
                                            "record.queue.time.avg", "record.queue.time.max",
                                            "node.outgoing.byte.rate", "node.outgoing.byte.total",
                                            "node.incoming.byte.rate", "node.incoming.byte.total",
                                            "node.request.latency.avg", "node.request.latency.max"))
    }
    total = last[PRODUCER + "record.send.total"]
    assert total.HasField("sum") and total.sum.is_monotonic
    assert total.sum.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE
    assert value(total) == 3
    assert total.unit == "records"
    assert last[PRODUCER + "record.send.rate"].HasField("gauge")
    node = [n for n in last if n.startswith(PRODUCER + "node.request.latency.avg")]
    assert node and all("('node.id', " in n for n in node)  # as librdkafka: node.id=1
    assert resource(pushes[0]) == {}


async def test_delta_sums_add_up_to_the_total() -> None:
    telemetry = FakeTelemetry(prefixes=[PRODUCER + "record.send.total"], interval_ms=100, delta=True)
    with anyio.fail_after(20):
        async with FakeCluster(brokers=1, telemetry=telemetry) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                await producer.send_and_wait("t", b"x", partition=0)
                await fc.wait_for(lambda: len(telemetry.pushes) >= 2)
                for _ in range(4):
                    await producer.send_and_wait("t", b"x", partition=0)
                seen = len(telemetry.pushes)
                await fc.wait_for(lambda: len(telemetry.pushes) >= seen + 2)
    metrics = [decode(p)[PRODUCER + "record.send.total"] for p in telemetry.pushes]
    assert sum(value(m) for m in metrics) == 5
    assert {m.sum.aggregation_temporality for m in metrics} == {metrics_pb2.AGGREGATION_TEMPORALITY_DELTA}
    starts = [m.sum.data_points[0].start_time_unix_nano for m in metrics]
    ends = [m.sum.data_points[0].time_unix_nano for m in metrics]
    assert starts[1:] == ends[:-1]  # each delta starts where the previous one ended


async def test_a_changed_subscription_is_followed() -> None:
    telemetry = FakeTelemetry(prefixes=[PRODUCER + "record.send.total"], interval_ms=100)
    with anyio.fail_after(20):
        async with FakeCluster(brokers=1, telemetry=telemetry) as fc:
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap):
                await fc.wait_for(lambda: len(telemetry.pushes) >= 1)
                telemetry.prefixes = [PRODUCER + "connection.creation.total"]
                telemetry.codecs = [CompressionType.GZIP]
                telemetry.changed()
                await fc.wait_for(lambda: len(telemetry.pushes) >= 2)
            assert fc.requests.count(GET_SUBSCRIPTIONS) == 2
    assert telemetry.refused[:1] == ["UNKNOWN_SUBSCRIPTION_ID"]
    assert set(decode(telemetry.pushes[0])) == {PRODUCER + "record.send.total"}
    assert set(decode(telemetry.pushes[1])) == {PRODUCER + "connection.creation.total"}
    assert telemetry.pushes[1].compression_type == CompressionType.GZIP
    assert len(telemetry.instances) == 1  # the same client instance asked again


async def test_a_refused_payload_reaches_no_application(caplog: pytest.LogCaptureFixture) -> None:
    telemetry = FakeTelemetry(prefixes=[""], interval_ms=100, max_bytes=10)
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(20):
        async with FakeCluster(brokers=1, telemetry=telemetry) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                await fc.wait_for(lambda: len(telemetry.refused) >= 2)
                await producer.send_and_wait("t", b"still works", partition=0)
    assert set(telemetry.refused) == {"TELEMETRY_TOO_LARGE"}
    assert telemetry.pushes == []
    ours = [r for r in caplog.records if r.name.startswith("aiokafka_lead.telemetry")]
    assert ours and all(r.levelno == logging.DEBUG for r in ours)


@pytest.mark.parametrize("push", [True, False])
async def test_without_a_receiver_nothing_is_sent(push: bool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(20):
        async with FakeCluster(brokers=1, telemetry=None if push else FakeTelemetry()) as fc:
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, enable_metrics_push=push) as producer:
                assert await producer.client_instance_id() is None
            assert fc.requests.count(GET_SUBSCRIPTIONS) == fc.requests.count(PUSH) == 0
    telemetry_logs = [r for r in caplog.records if r.name.startswith("aiokafka_lead.telemetry")]
    assert all(r.levelno == logging.DEBUG for r in telemetry_logs)
    if push:
        assert any("no telemetry receiver" in r.getMessage() for r in telemetry_logs)


async def test_a_consumer_names_its_group() -> None:
    telemetry = FakeTelemetry(prefixes=["org.apache.kafka.consumer."], interval_ms=100)
    with anyio.fail_after(20):
        async with FakeCluster(brokers=1, telemetry=telemetry) as fc:
            fc.create_topic("t", partitions=2, replication_factor=1)
            from tests.unit.consumer.util import consumer

            async with consumer(fc, group_id="g1") as c:
                c.subscribe(["t"])
                await fc.wait_for(lambda: len(telemetry.pushes) >= 2)
                assert isinstance(await c.client_instance_id(), uuid.UUID)
    assert resource(telemetry.pushes[-1]) == {"group_id": "g1"}
    names = decode(telemetry.pushes[-1])
    assert value(names["org.apache.kafka.consumer.coordinator.assigned.partitions"]) == 2


async def test_close_waits_little_for_a_broker_to_take_the_last_push() -> None:
    telemetry = FakeTelemetry(prefixes=[PRODUCER + "record.send.total"], interval_ms=100)
    with anyio.fail_after(20):
        async with FakeCluster(brokers=1, telemetry=telemetry) as fc:
            producer = AIOKafkaProducer(bootstrap_servers=fc.bootstrap, request_timeout_ms=30_000)
            await producer.start()
            try:
                await fc.wait_for(lambda: len(telemetry.pushes) >= 1)
                fc.intercept(PUSH, lambda *_: Drop(), times=None)  # never answered
            finally:
                started = time.monotonic()
                await producer.stop()
    # TERMINATING_PUSH_S (2 s), far from the 30 s request timeout
    assert TERMINATING_PUSH_S <= time.monotonic() - started < 10


async def test_an_error_answer_is_asked_again_no_sooner_than_a_second() -> None:
    telemetry = FakeTelemetry(prefixes=[PRODUCER + "record.send.total"], interval_ms=100)
    throttled = ErrorCode.THROTTLING_QUOTA_EXCEEDED
    refused = GetTelemetrySubscriptionsResponse(error_code=throttled, push_interval_ms=1)
    with anyio.fail_after(20):
        async with FakeCluster(brokers=1, telemetry=telemetry) as fc:
            fc.intercept(GET_SUBSCRIPTIONS, lambda *_: Respond(refused), times=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap):
                await fc.wait_for(lambda: len(telemetry.pushes) >= 1)
            asked = [r.time for r in fc.requests.select(GET_SUBSCRIPTIONS)]
    assert len(asked) == 2
    assert asked[1] - asked[0] >= MIN_RETRY_S  # not the 1 ms the answer named


async def test_a_broker_that_takes_no_pushes_ends_the_loop() -> None:
    telemetry = FakeTelemetry(prefixes=[PRODUCER + "record.send.total"], interval_ms=100)
    with anyio.fail_after(20):
        async with FakeCluster(brokers=1, telemetry=telemetry, max_versions={PUSH: -1}) as fc:
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                telemetry_loop = producer._core.telemetry
                assert telemetry_loop is not None
                await eventually(lambda: telemetry_loop.ended is not None)  # no request tells
            assert fc.requests.count(GET_SUBSCRIPTIONS) == 1
    assert telemetry.pushes == []
