"""The consumer's Java-named metrics for known traffic on the fake cluster: exact values."""

from __future__ import annotations

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.records import RecordBatchBuilder
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.telemetry.names import MetricName
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.consumer.util import DEADLINE, consume, consumer

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def append(fc: FakeCluster, values: list[bytes]) -> int:
    """One batch into t-0's log; its size in bytes."""
    builder = RecordBatchBuilder()
    for i, value in enumerate(values):
        builder.append(1_700_000_000_000 + i, None, value, ())
    batch = builder.build(-1, -1, -1)
    fc.partition(T0).append(batch)
    fc.notify()
    return len(batch)


def group(metrics: dict[MetricName, float], name: str) -> dict[str, float]:
    return {m.name: v for m, v in metrics.items() if m.group == name and len(m.tags) == 1}


async def test_fetch_manager_metrics() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2, replication_factor=1)
            sizes = [append(fc, [b"a" * 10] * 5), append(fc, [b"b" * 10] * 3)]
            async with consumer(fc, client_id="c1") as c:
                c._core.metrics.window.restart(lambda: 500.0)
                c.assign([T0, T1])
                assert len(await consume(c, 8)) == 8
                sizes.append(append(fc, [b"c"] * 4))  # fetched into the buffer, not handed out
                await fc.wait_for(lambda: c.highwater(T0) == 12)
                metrics = c.kafka_metrics()
                legacy = c.metrics()
    f = group(metrics, "consumer-fetch-manager-metrics")
    assert f["records-consumed-total"] == 8
    assert f["records-consumed-rate"] == pytest.approx(8 / 30)  # no time passed: one whole window
    assert f["bytes-consumed-total"] == sum(sizes)
    assert f["fetch-total"] >= 1
    assert f["records-per-request-avg"] == pytest.approx(8 / f["fetch-total"])
    assert 0 <= f["fetch-latency-avg"] <= f["fetch-latency-max"]
    assert f["records-lag-max"] == 4
    lags = {(m.tag("topic"), m.tag("partition")): v for m, v in metrics.items() if m.name == "records-lag"}
    assert lags == {("t", "0"): 4, ("t", "1"): 0}
    assert "assigned-partitions" not in group(metrics, "consumer-coordinator-metrics")  # no group
    assert legacy["kafka"]["consumer-fetch-manager-metrics,topic=t,partition=0"] == {"records-lag": 4.0}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_coordinator_metrics(protocol: str) -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=3, replication_factor=1)
            interval = {"heartbeat_interval_ms": 100} if protocol == "classic" else {}
            async with consumer(fc, group_id="g", group_protocol=protocol, **interval) as c:
                c._core.metrics.window.restart(lambda: 100.0)
                c.subscribe(["t"])
                await fc.wait_for(lambda: len(c.assignment()) == 3)
                await c.commit({T0: 5})
                await c.commit({T0: 6})
                member = c._coordinator
                assert member is not None
                heartbeats = member.stats.heartbeats
                await fc.wait_for(lambda: member.stats.heartbeats > heartbeats)
                metrics = c.kafka_metrics()
    g = group(metrics, "consumer-coordinator-metrics")
    assert g["assigned-partitions"] == 3
    assert g["commit-total"] == 2
    assert g["commit-rate"] == pytest.approx(2 / 30)
    assert 0 < g["commit-latency-avg"] <= g["commit-latency-max"]
    assert g["heartbeat-total"] >= 1
    assert 0 <= g["last-heartbeat-seconds-ago"] < DEADLINE
    assert g["rebalance-total"] == 1
    assert g["rebalance-rate-per-hour"] == pytest.approx(3600 / 30)
    assert g["rebalance-latency-avg"] == g["rebalance-latency-max"] == g["rebalance-latency-total"] > 0


async def test_records_lag_under_read_committed_is_to_the_last_stable_offset() -> None:
    """Java's records-lag: last stable offset - position under read_committed (records of an
    open transaction are not lag: the consumer cannot read them yet)."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2, replication_factor=1)
            append(fc, [b"a", b"b"])
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, transactional_id="tx") as p:
                await p.begin_transaction()
                for _ in range(3):
                    await p.send("t", b"open", partition=0)
                await p.flush()  # written, not committed
                async with consumer(fc, isolation_level="read_committed") as c:
                    c.assign([T0])
                    assert len(await consume(c, 2)) == 2
                    await fc.wait_for(lambda: c.highwater(T0) == 5 and c.last_stable_offset(T0) == 2)
                    metrics = c.kafka_metrics()
                await p.abort_transaction()
    lags = {m.tag("partition"): v for m, v in metrics.items() if m.name == "records-lag"}
    assert lags == {"0": 0}
