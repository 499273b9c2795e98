"""A node restarted on a new port is reached again (the KIP-951 NodeEndpoints case)."""

from __future__ import annotations

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, ConfigResource, ConfigResourceType
from aiokafka_lead.testing.cluster import KafkaCluster
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


async def test_node_restarted_on_new_port_is_reached_again(kafka_node_control: KafkaCluster) -> None:
    cluster = kafka_node_control
    async with AdminClient(bootstrap_servers=cluster.bootstrap(), metadata_max_age_ms=500) as admin:
        broker2 = ConfigResource(ConfigResourceType.BROKER, "2", {"log.retention.hours": None})
        await admin.describe_configs([broker2])  # opens a connection to node 2
        old_port = admin._core.store.node(2).port  # type: ignore[union-attr]
        await anyio.to_thread.run_sync(lambda: cluster.restart_node(2, new_port=True))
        ports: dict[int, int] = {}

        async def moved() -> bool:
            described = await admin.describe_cluster()
            ports.update({b.node_id: b.port for b in described.brokers})
            return ports.get(2, old_port) != old_port

        with anyio.fail_after(60):
            await eventually(moved, interval=0.2)
        # the long-lived client reaches node 2 at its new address
        with anyio.fail_after(60):
            configs = await admin.describe_configs([broker2])
        assert configs[(4, "2")]["log.retention.hours"].value is not None
        assert admin._core.store.node(2).port == ports[2]  # type: ignore[union-attr]
        conn = admin._core.pool.live_connection(2)
        assert conn is not None and conn.port == ports[2]
