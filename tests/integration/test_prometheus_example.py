"""examples/prometheus_metrics.py against the real cluster: Prometheus scrapes the clients'
metrics() (its text format, parsed by prometheus_client's own parser), then SIGTERM stops it."""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from prometheus_client.parser import text_string_to_metric_families

from aiokafka_lead.admin import AdminClient, NewTopic
from tests.integration.conftest import unique
from tests.support.scripts import running
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "prometheus_metrics.py"


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} of one scrape."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_prometheus_scrapes_the_clients_metrics(kafka_cluster: Any, admin: AdminClient) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("prom")
    await admin.create_topics([NewTopic(topic, 1, 3)])
    env = {**os.environ, "PYTHONPATH": str(EXAMPLE.parents[1])}
    command = [sys.executable, str(EXAMPLE), "--bootstrap", bootstrap, "--topic", topic, "--port", "0"]
    command += ["--group", unique("prom-group"), "--interval", "0.05"]
    scraped: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    async with running(command, env) as example:
        with anyio.fail_after(60):
            await example.until(lambda output: "/metrics\n" in output)
            url = example.output.split("serving ", 1)[1].split()[0]

            async def sent_and_read() -> bool:
                nonlocal scraped
                scraped = await anyio.to_thread.run_sync(scrape, url)
                sent = scraped.get(("aiokafka_lead_records_sent", (("client", "producer"),)), 0)
                fetched = scraped.get(("aiokafka_lead_fetches", (("client", "consumer"),)), 0)
                return sent >= 5 and fetched >= 1

            await eventually(sent_and_read)
        with anyio.fail_after(30):
            code = await example.terminate()
    await admin.delete_topics([topic])
    assert code == 0, example.output
    assert "stopped" in example.output
    # both clients' counters, nested ones flattened into names and integer keys into labels
    assert scraped[("aiokafka_lead_connections_closed_by_broker", (("client", "consumer"),))] == 0
    latency = [labels for name, labels in scraped if name == "aiokafka_lead_request_latency_count"]
    assert latency and all(dict(labels).keys() == {"client", "key"} for labels in latency), latency
    # the Java client's metrics under the JMX exporter's names, their tags as labels
    send_total = [
        (dict(labels), value)
        for (name, labels), value in scraped.items()
        if name == "kafka_producer_metrics_record_send_total"
    ]
    assert len(send_total) == 1 and send_total[0][1] >= 5, send_total
    assert send_total[0][0].keys() == {"client", "client_id"}
    node_latency = [
        dict(labels) for name, labels in scraped if name == "kafka_producer_node_metrics_request_latency_avg"
    ]
    assert node_latency and all(tags["node_id"].startswith("node-") for tags in node_latency), node_latency
    assert not any(name.startswith("aiokafka_lead_kafka") for name, _ in scraped)
