"""KRaft brokers in Docker (aiokafka_lead.testing.containers): reachable from the host and
from other containers, configured the apache/kafka way, node control, logs on failure.

Skipped, with one reason, where no Docker engine answers (or testcontainers is missing).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, ConfigResource, ConfigResourceType, NewTopic
from aiokafka_lead.testing.containers import (
    LABEL,
    KafkaContainer,
    KafkaContainerCluster,
    KafkaContainerError,
    broker_settings,
    default_image,
)
from aiokafka_lead.testing.pytest_plugin import require_docker
from tests.support.roundtrip import expected, produce_and_read
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def _topic() -> str:
    return f"dk-{uuid.uuid4().hex[:8]}"


async def test_single_node_from_the_host_and_from_another_container(
    kafka_container: KafkaContainer,
) -> None:
    assert kafka_container.image == default_image()
    bootstrap = kafka_container.bootstrap_servers()
    topic = _topic()
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 2, 1)])
        # The broker runs with the harness's settings, passed as KAFKA_* variables.
        broker = ConfigResource(ConfigResourceType.BROKER, "1", {"replica.fetch.backoff.ms": None})
        configs = await admin.describe_configs([broker])
        assert configs[(4, "1")]["replica.fetch.backoff.ms"].value == "100"
    assert await produce_and_read(bootstrap, topic, 2, 20) == expected(2, 20)

    # Another container on the broker's network reads the same records by its alias.
    client = kafka_container.get_docker_client().client
    output = await anyio.to_thread.run_sync(
        lambda: client.containers.run(
            kafka_container.image,
            [
                "/opt/kafka/bin/kafka-console-consumer.sh",
                "--bootstrap-server", kafka_container.internal_bootstrap_servers(),
                "--topic", topic, "--partition", "0", "--offset", "earliest",
                "--max-messages", "20", "--timeout-ms", "60000",
            ],
            network=kafka_container.network.name,
            remove=True,
            stderr=False,
        )
    )  # fmt: skip
    assert output.decode().split() == [v.decode() for v in expected(2, 20)[0]]


def test_a_broker_that_cannot_start_fails_with_its_log() -> None:
    require_docker()
    settings = {**broker_settings(1), "num.partitions": "not-a-number"}
    container = KafkaContainer(settings=settings, start_timeout=60)
    with pytest.raises(KafkaContainerError) as failure:
        container.start()
    message = str(failure.value)
    assert "exited during startup" in message
    assert "num.partitions" in message  # Kafka's own complaint, from the container log
    client = container.get_docker_client().client  # nothing is left behind
    assert not client.containers.list(all=True, filters={"label": f"{LABEL}={container.cluster_id}"})


async def test_three_nodes_survive_kill_and_a_restart_on_a_new_port() -> None:
    require_docker()
    cluster = KafkaContainerCluster(3)
    await anyio.to_thread.run_sync(cluster.up)
    try:
        topic = _topic()
        async with AdminClient(
            bootstrap_servers=cluster.bootstrap(), metadata_max_age_ms=500
        ) as admin:
            await admin.create_topics([NewTopic(topic, 3, 3)])
            assert await produce_and_read(cluster.bootstrap(), topic, 3, 10, "a") == expected(3, 10, "a")

            await anyio.to_thread.run_sync(lambda: cluster.kill_node(2))
            assert not cluster.is_running(2)
            await anyio.to_thread.run_sync(lambda: cluster.start_node(2))

            old_port = cluster.ports(3).client["PLAINTEXT"]
            await anyio.to_thread.run_sync(lambda: cluster.restart_node(3, new_port=True))
            new_port = cluster.ports(3).client["PLAINTEXT"]
            assert new_port != old_port

            async def moved() -> bool:
                described = await admin.describe_cluster()
                return {b.node_id: b.port for b in described.brokers}.get(3) == new_port

            with anyio.fail_after(60):
                await eventually(moved, interval=0.2)
        # Every node serves again, node 3 at its new address (same data volume).
        assert await produce_and_read(cluster.bootstrap(), topic, 3, 10, "b") == expected(3, 10, "b")
    finally:
        await anyio.to_thread.run_sync(cluster.down)
    client = cluster._client.client
    ours = {"label": f"{LABEL}={cluster.cluster_id}"}
    assert not client.containers.list(all=True, filters=ours)
    assert not client.volumes.list(filters=ours)


def test_the_documented_example_test_passes(tmp_path: Path) -> None:
    """docs/cluster.md's copyable test file, run by pytest as a user would run it."""
    require_docker()
    doc = (Path(__file__).resolve().parents[2] / "docs" / "cluster.md").read_text()
    section = doc[doc.index("### Your own tests") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("\n```", start)]
    assert "def test_" in code
    (tmp_path / "test_orders.py").write_text(code + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_orders.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout
