"""A connect that fails in any way is an ordinary, retriable connection error for that node:
never an OverflowError or UnicodeError that ends the sender, the fetcher or an admin call,
and an impossible coordinator answer is retried like an unavailable coordinator."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AIOKafkaAdminClient
from aiokafka_lead.errors import KafkaConnectionError, KafkaTimeoutError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.messages import FindCoordinatorResponse, MetadataResponse
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster, Rewrite
from tests.support.loop_lag import watch_loop

METADATA, FIND_COORDINATOR = 3, 10
#: passes the metadata checks (a name could be internationalised) but the IDNA codec refuses it
UNENCODABLE_HOST = "ä" * 64


@pytest.mark.parametrize(
    ("host", "port"),
    [("127.0.0.1", 70000), ("127.0.0.1", -1), (UNENCODABLE_HOST, 9092)],
    ids=["port-70000", "port-minus-1", "unencodable-host"],
)
async def test_a_connect_that_raises_anything_is_a_connection_error(host: str, port: int) -> None:
    conn = Connection(host, port, ConnectionConfig(), node_id=2)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            with pytest.raises(KafkaConnectionError, match=f"connect to node 2 \\({host}:{port}\\) failed"):
                await tg.start(conn.run)
    assert conn.closed


def advertise_node_2_at(host: str) -> Rewrite:
    def fn(response: Any, frame: bytes) -> Any:
        assert isinstance(response, MetadataResponse)
        for broker in response.brokers:
            if broker.node_id == 2:
                broker.host = host
        return response

    return Rewrite(fn)


async def test_an_unreachable_leader_fails_its_partition_only_and_the_clients_live_on() -> None:
    async with watch_loop() as watch, FakeCluster(brokers=2) as fc:
        fc.create_topic("good", partitions=1, leaders=[1])
        fc.create_topic("other", partitions=1, leaders=[2])
        fc.intercept(METADATA, lambda *_: advertise_node_2_at(UNENCODABLE_HOST), times=None)
        with anyio.fail_after(15):
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap, request_timeout_ms=1000, delivery_timeout_ms=1500
            ) as producer:
                with pytest.raises(KafkaTimeoutError, match="other-0 not delivered"):
                    await producer.send_and_wait("other", b"x")
                assert (await producer.send_and_wait("good", b"y")).offset == 0
            async with AIOKafkaAdminClient(bootstrap_servers=fc.bootstrap, request_timeout_ms=1000) as admin:
                with pytest.raises(KafkaTimeoutError, match="list_offsets"):
                    await admin.list_offsets({TopicPartition("other", 0): -1})
                good = await admin.list_offsets({TopicPartition("good", 0): -1})
                assert good[TopicPartition("good", 0)].offset == 1
    watch.assert_responsive()


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [("node_id", -1, "node_id -1"), ("node_id", 2**30, "node_id 1073741824"), ("port", 70000, "port 70000")],
)
async def test_an_impossible_coordinator_is_retried_and_named(field: str, value: int, named: str) -> None:
    def lie(response: Any, frame: bytes) -> Any:
        assert isinstance(response, FindCoordinatorResponse)
        for entry in response.coordinators:
            setattr(entry, field, value)
        return response

    async with FakeCluster(brokers=1) as fc:
        fc.intercept(FIND_COORDINATOR, lambda *_: Rewrite(lie), times=None)
        with anyio.fail_after(10):
            async with AIOKafkaAdminClient(bootstrap_servers=fc.bootstrap, request_timeout_ms=800) as admin:
                with pytest.raises(KafkaTimeoutError) as info:
                    await admin.find_coordinator("g")
                assert "FindCoordinator v" in str(info.value) and "from node 1" in str(info.value)
                assert named in str(info.value)
                fc.clear_intercepts()
                assert await admin.find_coordinator("g") == 1


async def test_a_coordinator_answer_without_the_key_is_retried() -> None:
    def lie(response: Any, frame: bytes) -> Any:
        response.coordinators = []
        return response

    async with FakeCluster(brokers=1) as fc:
        fc.intercept(FIND_COORDINATOR, lambda *_: Rewrite(lie), times=2)
        with anyio.fail_after(10):
            async with AIOKafkaAdminClient(bootstrap_servers=fc.bootstrap) as admin:
                assert await admin.find_coordinator("g") == 1
