"""Lifecycle, version negotiation and the request log of the fake cluster."""

from __future__ import annotations

import uuid

import anyio
import pytest

from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import KafkaConnectionError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.framing import FrameReader, decode_response, encode_request
from aiokafka_lead.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
)
from aiokafka_lead.testing.fake import FakeCluster, FakeClusterError
from tests.unit.fake.util import DEADLINE, batch, connect, produce_partition, produce_request

PRODUCE, METADATA, API_VERSIONS = 0, 3, 18


async def test_bootstrap_and_lifecycle() -> None:
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            async with FakeCluster(brokers=3) as fc:
                addresses = fc.bootstrap.split(",")
                assert len(addresses) == 3 and all(a.startswith("127.0.0.1:") for a in addresses)
                assert [fc.address(n) for n in (1, 2, 3)] == [
                    ("127.0.0.1", int(a.rsplit(":", 1)[1])) for a in addresses
                ]
                conn = Connection(*fc.address(2), ConnectionConfig(), node_id=2)
                await tg.start(conn.run)
            # Leaving the cluster closed its listeners and connections: the client notices.
            with pytest.raises(KafkaConnectionError):
                await conn.send(MetadataRequest(topics=None))
            assert conn.closed
        assert fc.handler_errors == []


async def test_advertised_versions_and_caps() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=2, max_versions={0: 9}) as fc:
            fc.cap_versions({3: 8}, node_ids=[2])
            async with connect(fc, 1) as one, connect(fc, 2) as two:
                assert (one.version_for(0), one.version_for(1), one.version_for(2)) == (9, 18, 11)
                assert (one.version_for(3), two.version_for(3)) == (13, 8)
                assert (one.version_for(23), one.version_for(9), one.version_for(8)) == (4, 9, 9)
                response = await one.send(ApiVersionsRequest(), version=2)
            ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
            assert ranges[0] == (3, 9) and ranges[1] == (4, 18) and ranges[3] == (0, 13)


async def test_unsupported_api_versions_version_gets_a_v0_error_body() -> None:
    """What Java brokers send (KIP-511): error 35, v0 body, ApiVersions' own range only."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1, max_versions={API_VERSIONS: 2}) as fc:
            stream = await anyio.connect_tcp(*fc.address(1))
            async with stream:
                await stream.send(encode_request(ApiVersionsRequest(), 4, 77, "raw"))
                reader = FrameReader()
                frames: list[object] = []
                while not frames:
                    frames = list(reader.feed(await stream.receive()))
            correlation_id, body = decode_response(frames[0], ApiVersionsResponse, 0)  # type: ignore[arg-type]
            assert correlation_id == 77 and body.error_code == E.UNSUPPORTED_VERSION
            assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 2)]


async def test_client_falls_back_when_api_versions_v4_is_unsupported() -> None:
    """Kafka < 2.4 has no ApiVersions v3: the client reads the v0 error body and retries."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1, max_versions={API_VERSIONS: 2}) as fc:
            async with connect(fc, 1) as conn:
                assert conn.api_versions is not None
            assert [r.api_version for r in fc.requests.select(api_key=API_VERSIONS)] == [4, 2]


async def test_request_log_and_counters() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", leaders=[1])
            async with connect(fc, 1, client_id="app-1") as one, connect(fc, 2) as two:
                await one.send(MetadataRequest(topics=None))
                mark = fc.now()
                fc.move_leader(("t", 0), 2)
                hinted = await one.send(produce_request("t", 0, batch([b"x"])))
                hint = produce_partition(hinted).current_leader.leader_id
                await (one, two)[hint - 1].send(produce_request("t", 0, batch([b"x"])))
            assert fc.count(api_key=PRODUCE, since=mark) == 2
            assert fc.count(api_key=PRODUCE, node_id=2, since=mark) == 1  # the retry went to node 2
            assert fc.count(api_key=METADATA, since=mark) == 0  # and needed no Metadata
            assert fc.count(api_key=METADATA) == 1
            assert fc.count() == len(fc.requests)
            first = fc.requests.select(api_key=METADATA)[0]
            assert (first.node_id, first.api_version, first.client_id) == (1, 13, "app-1")
            assert isinstance(first.request, MetadataRequest) and first.correlation_id > 0
            times = [r.time for r in fc.requests]
            assert times == sorted(times)


async def test_init_producer_id() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            async with connect(fc, 1) as conn:
                first = await conn.send(
                    InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
                )
                second = await conn.send(
                    InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
                )
                empty = await conn.send(InitProducerIdRequest(transaction_timeout_ms=60_000))
                bumped = await conn.send(
                    InitProducerIdRequest(
                        transactional_id=None,
                        transaction_timeout_ms=60_000,
                        producer_id=first.producer_id,
                        producer_epoch=first.producer_epoch,
                    )
                )
            assert empty.error_code == E.INVALID_REQUEST  # "" is not null: INVALID_REQUEST, as in Kafka
            assert first.producer_id != second.producer_id
            assert (first.error_code, first.producer_epoch) == (0, 0)
            assert (bumped.producer_id, bumped.producer_epoch) == (first.producer_id, 1)


async def test_stop_and_start_node() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=2) as fc:
            port = fc.address(2)[1]
            await fc.stop_node(2)
            assert str(port) not in fc.bootstrap
            await fc.start_node(2)
            assert fc.address(2)[1] == port  # same port again
            async with connect(fc, 2) as conn:
                assert (await conn.send(MetadataRequest(topics=None))).cluster_id == fc.cluster_id


async def test_an_error_in_the_body_propagates_unwrapped() -> None:
    with anyio.fail_after(DEADLINE), pytest.raises(ZeroDivisionError):
        async with FakeCluster(brokers=1) as fc:
            async with connect(fc, 1):
                pass
            _ = 1 / 0


async def test_metadata_versions_and_lookups() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("b")
            topic_id = fc.create_topic("a", partitions=2)
            async with connect(fc, 1) as conn:
                v0 = await conn.send(MetadataRequest(topics=[]), version=0)  # [] = all in v0
                v1 = await conn.send(MetadataRequest(topics=[]), version=1)  # [] = none from v1
                wanted = MetadataRequest.MetadataRequestTopic(name=None, topic_id=topic_id)
                by_id = await conn.send(MetadataRequest(topics=[wanted]), version=12)
                missing = await conn.send(
                    MetadataRequest(
                        topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=uuid.uuid4())]
                    ),
                    version=12,
                )
            assert [t.name for t in v0.topics] == ["a", "b"]
            assert v1.topics == []
            assert (by_id.topics[0].name, len(by_id.topics[0].partitions)) == ("a", 2)
            assert (missing.topics[0].error_code, missing.topics[0].name) == (100, None)


async def test_list_offsets_checks_leadership_and_epochs() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=2) as fc:
            fc.create_topic("t", leaders=[1])
            fc.move_leader(("t", 0), 2)
            fc.move_leader(("t", 0), 1)  # epoch 2 on node 1

            def request(epoch: int) -> ListOffsetsRequest:
                partition = ListOffsetsRequest.ListOffsetsPartition(
                    partition_index=0, current_leader_epoch=epoch, timestamp=-1
                )
                topic = ListOffsetsRequest.ListOffsetsTopic(name="t", partitions=[partition])
                return ListOffsetsRequest(replica_id=-1, topics=[topic])

            async with connect(fc, 1) as one, connect(fc, 2) as two:
                codes = [(await one.send(request(e))).topics[0].partitions[0].error_code for e in (1, 2, 3)]
                follower = (await two.send(request(2))).topics[0].partitions[0]
            assert codes == [74, 0, 75]
            assert follower.error_code == E.NOT_LEADER_OR_FOLLOWER


async def test_strict_cluster_reports_requests_it_could_not_parse() -> None:
    # A Metadata v0 header, then a topic count promising more topics than are sent.
    frame = bytes.fromhex("0000000e0003000000000001ffff00000005")
    with anyio.fail_after(DEADLINE), pytest.raises(FakeClusterError, match="malformed"):
        async with FakeCluster(brokers=1) as fc:
            stream = await anyio.connect_tcp(*fc.address(1))
            async with stream:
                await stream.send(frame)
                with pytest.raises(anyio.EndOfStream):
                    await stream.receive()  # the broker hung up
    assert len(fc.protocol_errors) == 1


async def test_unadvertised_version_closes_the_connection() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1, max_versions={3: 5}, strict=False) as fc, connect(fc, 1) as conn:
            with pytest.raises(KafkaConnectionError):
                await conn.send(MetadataRequest(topics=None), version=12)
        assert "v12 is not advertised" in str(fc.protocol_errors[0])


async def test_auto_create_topics_on_metadata() -> None:
    wanted = [MetadataRequest.MetadataRequestTopic(name="new")]
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3, auto_create_topics=True, default_partitions=2) as fc:
            async with connect(fc, 1) as conn:
                refused = await conn.send(MetadataRequest(topics=wanted, allow_auto_topic_creation=False))
                first = await conn.send(MetadataRequest(topics=wanted))  # the flag defaults on
                second = await conn.send(MetadataRequest(topics=wanted))
            assert refused.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
            assert first.topics[0].error_code == E.LEADER_NOT_AVAILABLE  # created, leaders not yet announced
            assert (second.topics[0].error_code, len(second.topics[0].partitions)) == (0, 2)
