"""examples/prometheus_metrics.py against the real cluster: Prometheus scrapes the clients'
metrics() (its text format, parsed by prometheus_client's own parser), then SIGTERM stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from anyio.streams.text import TextReceiveStream
from prometheus_client.parser import text_string_to_metric_families

from aiokafka_lead.admin import AdminClient, NewTopic
from tests.integration.conftest import unique
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
    output = ""
    scraped: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    async with await anyio.open_process(command, env=env, stderr=subprocess.STDOUT) as proc:
        assert proc.stdout is not None
        try:
            with anyio.fail_after(60):
                async for chunk in TextReceiveStream(proc.stdout):
                    output += chunk
                    if "/metrics\n" in output:
                        break
                assert "serving " in output, output
                url = output.split("serving ", 1)[1].split()[0]

                async def sent_and_read() -> bool:
                    nonlocal scraped
                    scraped = await anyio.to_thread.run_sync(scrape, url)
                    sent = scraped.get(("aiokafka_lead_records_sent", (("client", "producer"),)), 0)
                    fetched = scraped.get(("aiokafka_lead_fetches", (("client", "consumer"),)), 0)
                    return sent >= 5 and fetched >= 1

                await eventually(sent_and_read)
            proc.send_signal(signal.SIGTERM)
            with anyio.fail_after(30):
                async for chunk in TextReceiveStream(proc.stdout):
                    output += chunk
                await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
    await admin.delete_topics([topic])
    assert proc.returncode == 0, output
    assert "stopped" in output
    # both clients' counters, nested ones flattened into names and integer keys into labels
    assert scraped[("aiokafka_lead_connections_closed_by_broker", (("client", "consumer"),))] == 0
    latency = [labels for name, labels in scraped if name == "aiokafka_lead_request_latency_count"]
    assert latency and all(dict(labels).keys() == {"client", "key"} for labels in latency), latency
