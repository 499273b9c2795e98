"""The kip-conditions plumbing on a real broker: a proxied listener advertised at the
Toxiproxy port, latency added on the way, the broker's own settings at Kafka's defaults."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.bench.scenarios import SCENARIOS, cluster_for
from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.netem import LinkConditions, Toxiproxy, proxy_cluster, toxiproxy_server

pytestmark = pytest.mark.integration

ONE_WAY_MS = 25


async def test_clients_reach_a_broker_only_through_the_emulated_link(tmp_path: Path) -> None:
    binary, why = await anyio.to_thread.run_sync(toxiproxy_server)
    if binary is None:
        pytest.skip(why)  # Go missing: the demo and benchmarks fall back to loopback
    cluster = KafkaCluster(tmp_path / "c", 1, proxied=True)
    await anyio.to_thread.run_sync(cluster.up)
    toxiproxy = Toxiproxy(binary, tmp_path / "toxiproxy.log")
    try:
        assert cluster.non_default_settings() == {
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
        }
        await anyio.to_thread.run_sync(toxiproxy.start)
        link = LinkConditions(ONE_WAY_MS, 1, 10_000)
        bootstrap = await anyio.to_thread.run_sync(proxy_cluster, toxiproxy, cluster, link)
        proxy_port = cluster.ports(1).advertised_port("PROXIED")
        assert bootstrap == f"127.0.0.1:{proxy_port}" and proxy_port != cluster.ports(1).client["PROXIED"]
        with anyio.fail_after(120):
            async with AdminClient(bootstrap_servers=cluster.bootstrap()) as admin:
                await admin.create_topics([NewTopic("netem", 1, 1)])
            async with AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all") as producer:
                await producer.send_and_wait("netem", b"warm")
                node = producer._core.store.node(1)  # what the broker advertised to the client
                assert node is not None and node.address == ("127.0.0.1", proxy_port)
                started = time.monotonic()
                await producer.send_and_wait("netem", b"through the link")
                took_ms = (time.monotonic() - started) * 1000
        assert took_ms >= 2 * (ONE_WAY_MS - 1) * 0.95  # one round trip through both toxics
    finally:
        await anyio.to_thread.run_sync(toxiproxy.stop)
        await anyio.to_thread.run_sync(cluster.down)


async def test_a_scenario_cluster_carries_the_offsets_topic_when_asked(tmp_path: Path) -> None:
    """``--offsets-topic`` (benchmark and demo): __consumer_offsets exists before anything is
    measured, and the conditions say so; a bare cluster has only what the test creates."""
    with anyio.fail_after(180):
        for wanted in (True, False):
            async with cluster_for(
                SCENARIOS["loopback-defaults"], tmp_path / str(wanted), rate=100, record_size=100,
                brokers=1, offsets_topic=wanted, say=lambda _: None,
            ) as env:  # fmt: skip
                async with AdminClient(bootstrap_servers=env.control_bootstrap) as admin:
                    topics = await admin.list_topics()
                state = next(line for line in env.describe() if line.startswith("cluster state:"))
                assert ("__consumer_offsets" in topics) is wanted
                expected = "__consumer_offsets present" if wanted else "bare"
                assert state.startswith(f"cluster state: {expected}")
