"""A FakeCluster works as a pytest-asyncio fixture (entered and left in different tasks)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from aiokafka_lead.protocol.messages import MetadataRequest
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.fake.util import DEADLINE, connect


@pytest.fixture
async def fc() -> AsyncIterator[FakeCluster]:
    async with FakeCluster(brokers=2) as cluster:
        cluster.create_topic("t", partitions=2)
        yield cluster


async def test_cluster_from_a_fixture(fc: FakeCluster) -> None:
    with anyio.fail_after(DEADLINE):
        async with connect(fc, 1) as conn:
            response = await conn.send(MetadataRequest(topics=None))
        assert [len(t.partitions) for t in response.topics] == [2]
        await fc.restart_node(2, new_port=True)  # uses the cluster's own task group
        async with connect(fc, 2) as conn:
            assert (await conn.send(MetadataRequest(topics=None))).topics[0].name == "t"
