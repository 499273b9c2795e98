"""The share consumer's and the admin client's Java-named metrics on the fake cluster."""

from __future__ import annotations

import anyio
import pytest

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.telemetry.names import MetricName
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.consumer.test_share_consumer_fake import TP0, share, take
from tests.unit.consumer.util import DEADLINE, produce


def group(metrics: dict[MetricName, float], name: str) -> dict[str, float]:
    return {m.name: v for m, v in metrics.items() if m.group == name and len(m.tags) == 1}


async def test_share_fetch_manager_metrics() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", 1, 1)
            fc.shares.configure("g", auto_offset_reset="earliest")
            produce(fc, TP0, [b"a", b"b", b"c"])
            async with share(fc) as c:
                c._core.metrics.window.restart(lambda: 100.0)
                assert len(await take(c, 3)) == 3
                metrics = c.kafka_metrics()
    f = group(metrics, "consumer-share-fetch-manager-metrics")
    assert f["records-fetched-total"] == 3
    assert f["records-fetched-rate"] == pytest.approx(3 / 30)
    assert f["fetch-total"] >= 1
    assert f["records-per-request-avg"] == pytest.approx(3 / f["fetch-total"])
    assert 0 <= f["fetch-latency-avg"] <= f["fetch-latency-max"]
    assert group(metrics, "consumer-share-metrics")["connection-count"] >= 1


async def test_admin_client_metrics() -> None:
    with anyio.fail_after(DEADLINE):
        async with (
            FakeCluster(brokers=2) as fc,
            AdminClient(bootstrap_servers=fc.bootstrap, client_id="adm") as admin,
        ):
            await admin.list_topics()
            metrics = admin.kafka_metrics()
    a = group(metrics, "admin-client-metrics")
    assert a["request-total"] == a["response-total"] == len(fc.requests)
    assert {m.tag("client-id") for m in metrics} == {"adm"}
    nodes = {m.tag("node-id") for m in metrics if m.group == "admin-client-node-metrics"}
    assert nodes and all(n is not None and n.startswith("node-") for n in nodes)
