"""The consumer's Java-named metrics for known traffic on the fake cluster: exact values."""

from __future__ import annotations

import anyio
import pytest

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
    lags = {
        (m.tag("topic"), m.tag("partition")): v for m, v in metrics.items() if m.name == "records-lag"
    }
    assert lags == {("t", "0"): 4, ("t", "1"): 0}
    assert "assigned-partitions" not in group(metrics, "consumer-coordinator-metrics")  # no group
    assert legacy["kafka"]["consumer-fetch-manager-metrics,topic=t,partition=0"] == {"records-lag": 4.0}


async def test_a_member_reports_its_assigned_partitions() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=3, replication_factor=1)
            async with consumer(fc, group_id="g") as c:
                c.subscribe(["t"])
                await fc.wait_for(lambda: len(c.assignment()) == 3)
                metrics = c.kafka_metrics()
    assert group(metrics, "consumer-coordinator-metrics") == {"assigned-partitions": 3}
