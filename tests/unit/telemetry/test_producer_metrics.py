"""The producer's Java-named metrics for known traffic on the fake cluster: exact values."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import error_for_code
from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.protocol.messages import ProduceResponse
from aiokafka_lead.records.compression import CompressionType, decompress
from aiokafka_lead.telemetry.names import MetricName
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Error, Respond

PRODUCE = 0
VALUE = b"v" * 100


class FrozenClock:
    def __call__(self) -> float:
        return 500.0


def by_name(metrics: dict[MetricName, float], group: str) -> dict[str, float]:
    return {m.name: v for m, v in metrics.items() if m.group == group and len(m.tags) == 1}


def batch_sizes(fc: FakeCluster) -> list[int]:
    requests = [r.request for r in fc.requests.select(PRODUCE)]
    return [len(p.records) for r in requests for t in r.topic_data for p in t.partition_data]


def throttled_answer(*_: Any) -> Respond:
    part = ProduceResponse.PartitionProduceResponse(index=0, base_offset=0)
    topic = ProduceResponse.TopicProduceResponse(name="t", partition_responses=[part])
    return Respond(ProduceResponse(responses=[topic], throttle_time_ms=250))


async def test_producer_metrics_count_what_was_sent() -> None:
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, client_id="p1") as producer:
                producer._core.metrics.window.restart(FrozenClock())
                for _ in range(3):
                    await producer.send_and_wait("t", VALUE, partition=0)
                # one retriable refusal: the 4th record goes twice
                fc.intercept(PRODUCE, lambda *_: Error(ErrorCode.REQUEST_TIMED_OUT), times=1)
                await producer.send_and_wait("t", VALUE, partition=0)
                # one answer asking for a 250 ms throttle
                fc.intercept(PRODUCE, throttled_answer, times=1)
                await producer.send_and_wait("t", VALUE, partition=0)
                metrics = producer.kafka_metrics()
                legacy = producer.metrics()
    p = by_name(metrics, "producer-metrics")
    sizes = batch_sizes(fc)
    assert len(sizes) == 6  # 5 batches, one of them twice
    assert p["record-send-total"] == 5
    assert p["record-send-rate"] == pytest.approx(5 / 30)  # no time passed: one whole window
    assert p["record-retry-total"] == 1
    assert p["record-error-total"] == 0
    assert p["batch-split-total"] == 0
    assert p["records-per-request-avg"] == 1.0
    assert p["batch-size-avg"] == pytest.approx(sum(sizes) / 6)
    assert p["batch-size-max"] == max(sizes)
    assert p["compression-rate-avg"] == 1.0
    # six answers (the refusal is one too), one of them asking for 250 ms
    assert p["produce-throttle-time-avg"] == pytest.approx(250 / 6)
    assert p["produce-throttle-time-max"] == 250
    assert 0 <= p["record-queue-time-avg"] <= p["record-queue-time-max"]
    assert 0 < p["request-latency-avg"] <= p["request-latency-max"] < 30_000
    assert p["buffer-available-bytes"] == p["buffer-total-bytes"] == 32 * 1024 * 1024
    client = {m.tag("client-id") for m in metrics}
    assert client == {"p1"}
    # the connections' group: every request logged by the fake was sent and answered
    c = by_name(metrics, "producer-metrics")
    assert c["request-total"] == c["response-total"] == len(fc.requests)
    assert c["connection-creation-total"] - c["connection-close-total"] == c["connection-count"] >= 1
    nodes = {m: v for m, v in metrics.items() if m.group == "producer-node-metrics"}
    out = sum(v for m, v in nodes.items() if m.name == "outgoing-byte-total")
    assert out == c["outgoing-byte-total"] > 0
    assert {m.tag("node-id") for m in nodes} >= {"node-1"}
    # metrics() keeps its keys and carries the same metrics by group
    assert legacy["records_sent"] == 5
    assert legacy["kafka"]["producer-metrics"]["record-send-total"] == 5


async def test_a_compressed_batch_reports_its_ratio() -> None:
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, compression_type="gzip") as producer:
                await producer.send_and_wait("t", VALUE, partition=0)
                p = by_name(producer.kafka_metrics(), "producer-metrics")
    [batch] = [b for r in fc.requests.select(PRODUCE) for t in r.request.topic_data for b in t.partition_data]
    # the batch's records section (after its 61-byte header), compressed over uncompressed
    section = bytes(batch.records)[61:]
    ratio = len(section) / len(decompress(CompressionType.GZIP, section))
    assert p["compression-rate-avg"] == pytest.approx(ratio)
    assert p["compression-rate-avg"] < 1.0


async def test_failed_records_are_counted() -> None:
    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                fc.intercept(PRODUCE, lambda *_: Error(ErrorCode.INVALID_RECORD), times=1)
                handles = [await producer.send("t", VALUE, partition=0) for _ in range(2)]
                await producer.flush()
                for h in handles:
                    with pytest.raises(type(error_for_code(ErrorCode.INVALID_RECORD))):
                        await h
                p = by_name(producer.kafka_metrics(), "producer-metrics")
    assert p["record-error-total"] == 2
    assert p["record-send-total"] == 0
