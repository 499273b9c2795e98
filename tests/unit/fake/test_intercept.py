"""Every intercept action, as the client's Connection experiences it (never a hang)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import DecodeError, KafkaConnectionError, KafkaTimeoutError
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    FetchRequest,
    FindCoordinatorRequest,
    ListOffsetsRequest,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Request,
)
from aiokafka_lead.testing.fake import (
    Close,
    Corrupt,
    Delay,
    Drop,
    Error,
    FakeCluster,
    Respond,
    Truncate,
    error_response,
)
from tests.unit.fake.util import (
    DEADLINE,
    batch,
    connect,
    fetch_partition,
    fetch_request,
    produce_partition,
    produce_request,
)

PRODUCE, FETCH, METADATA = 0, 1, 3


def always(action: Any) -> Any:
    return lambda node_id, header, request: action


async def test_error_once_then_normal() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            handle = fc.intercept(PRODUCE, always(Error(E.REQUEST_TIMED_OUT)))
            async with connect(fc, 1) as conn:
                first = await conn.send(produce_request("t", 0, batch([b"a"])))
                second = await conn.send(produce_request("t", 0, batch([b"b"])))
            assert produce_partition(first).error_code == E.REQUEST_TIMED_OUT
            assert produce_partition(first).index == 0 and first.responses[0].name == "t"
            assert produce_partition(second).error_code == E.NONE
            assert not handle.active and handle.fired == 1
            assert [r[2] for r in fc.records(("t", 0))] == [b"b"]  # Error skips the handler


async def test_times_none_until_removed_and_filter_by_node() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=2) as fc:
            fc.create_topic("t", partitions=2, leaders=[1, 2])

            def only_node_2(node_id: int, header: RequestHeader, request: Any) -> Any:
                return Error(E.NOT_LEADER_OR_FOLLOWER) if node_id == 2 else None

            handle = fc.intercept(FETCH, only_node_2, times=None)
            async with connect(fc, 1) as one, connect(fc, 2) as two:
                for _ in range(3):
                    answer = await two.send(fetch_request(fc, "t", 1, 0))
                    assert fetch_partition(answer).error_code == E.NOT_LEADER_OR_FOLLOWER
                assert fetch_partition(await one.send(fetch_request(fc, "t", 0, 0))).error_code == E.NONE
                assert handle.fired == 3 and handle.active
                handle.remove()
                assert fetch_partition(await two.send(fetch_request(fc, "t", 1, 0))).error_code == E.NONE


async def test_respond_with_a_scripted_body() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            scripted = MetadataResponse(cluster_id="scripted", controller_id=42)
            fc.intercept(METADATA, always(Respond(scripted)))
            async with connect(fc, 1) as conn:
                response = await conn.send(MetadataRequest(topics=None))
            assert (response.cluster_id, response.controller_id, response.brokers) == (
                "scripted",
                42,
                [],
            )


async def test_delay_then_normal_handling() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            fc.intercept(PRODUCE, always(Delay(0.05)))
            async with connect(fc, 1) as conn:
                start = time.monotonic()
                response = await conn.send(produce_request("t", 0, batch([b"a"])))
                assert time.monotonic() - start >= 0.05
                assert produce_partition(response).error_code == E.NONE
                # A delay longer than the client's timeout surfaces as a timeout.
                fc.intercept(PRODUCE, always(Delay(10)))
                with pytest.raises(KafkaTimeoutError):
                    await conn.send(produce_request("t", 0, batch([b"b"])), timeout_ms=50)


async def test_drop_times_out_on_the_client_then_the_broker_still_serves() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            fc.intercept(METADATA, always(Drop()))
            async with connect(fc, 1) as conn:
                with pytest.raises(KafkaTimeoutError):
                    await conn.send(MetadataRequest(topics=None), timeout_ms=50)
                assert conn.closed  # the client closes a connection after a timeout
            assert fc.count(api_key=METADATA) == 1
            async with connect(fc, 1) as conn:
                assert (await conn.send(MetadataRequest(topics=None))).topics[0].name == "t"


@pytest.mark.parametrize("n_bytes", [0, 3, 10])
async def test_truncate_surfaces_a_connection_error(n_bytes: int) -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            fc.intercept(PRODUCE, always(Truncate(n_bytes)))
            async with connect(fc, 1) as conn:
                with pytest.raises(KafkaConnectionError):
                    await conn.send(produce_request("t", 0, batch([b"a"])))
                assert conn.closed
            # Truncation happens after the append: the response was lost, not the write.
            assert [r[2] for r in fc.records(("t", 0))] == [b"a"]


async def test_corrupt_surfaces_a_decode_error_and_the_connection_survives() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            fc.intercept(METADATA, always(Corrupt()))
            fc.intercept(PRODUCE, always(Corrupt()))
            async with connect(fc, 1) as conn:
                with pytest.raises(DecodeError):
                    await conn.send(MetadataRequest(topics=None))
                with pytest.raises(DecodeError):
                    await conn.send(produce_request("t", 0, batch([b"a"])))
                # Framing was intact, so only those requests failed.
                assert not conn.closed
                assert (await conn.send(MetadataRequest(topics=None))).topics[0].name == "t"


async def test_close_surfaces_a_connection_error() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.intercept(METADATA, always(Close()))
            async with connect(fc, 1) as conn:
                with pytest.raises(KafkaConnectionError):
                    await conn.send(MetadataRequest(topics=None))
                assert conn.closed


def _requests(fc: FakeCluster) -> list[Request]:
    topic_id = fc.topics["t"].topic_id
    return [
        produce_request("t", 0, batch([b"a"])),
        FetchRequest(
            max_wait_ms=0,
            topics=[
                FetchRequest.FetchTopic(
                    topic="t",
                    topic_id=topic_id,
                    partitions=[FetchRequest.FetchPartition(partition=0)],
                )
            ],
        ),
        ListOffsetsRequest(
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name="t",
                    partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0)],
                )
            ]
        ),
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]),
        OffsetCommitRequest(
            group_id="g",
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name="t",
                    partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0)],
                )
            ],
        ),
        OffsetFetchRequest(
            group_id="g",
            topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])],
        ),
        FindCoordinatorRequest(coordinator_keys=["g"]),
    ]


async def test_generic_error_responses_decode_on_the_client() -> None:
    """Error(code) works for any API: the client decodes it and sees the code per item."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as conn:
                for request in _requests(fc):
                    fc.intercept(request.API_KEY, always(Error(E.THROTTLING_QUOTA_EXCEEDED)))
                    version = 7 if isinstance(request, OffsetFetchRequest) else None
                    response = await conn.send(request, version=version)
                    codes = _error_codes(response)
                    assert codes and set(codes) == {89}, (type(response).__name__, response)


def test_error_response_mirrors_items() -> None:
    request = produce_request("t", 3, b"")
    response = error_response(request, 12, 6)
    part = produce_partition(response)
    assert (response.responses[0].name, part.index, part.error_code) == ("t", 3, 6)
    fc = FakeCluster(brokers=1)
    fc.create_topic("t")
    fetch = error_response(_requests(fc)[1], 17, 74)
    assert fetch.error_code == E.FENCED_LEADER_EPOCH  # top level too (v7+)
    assert fetch.responses[0].topic_id == fc.topics["t"].topic_id
    assert fetch_partition(fetch).error_code == E.FENCED_LEADER_EPOCH
    coordinator = error_response(_requests(fc)[-1], 6, 15)
    assert [(c.key, c.error_code) for c in coordinator.coordinators] == [("g", 15)]


def _error_codes(obj: Any) -> list[int]:
    """Every error_code in a decoded response except zero-valued top levels of old versions."""
    codes: list[int] = []
    for field in type(obj)._FIELDS:
        value = getattr(obj, field.attr)
        if field.attr == "error_code" and value:
            codes.append(value)
        elif isinstance(value, list):
            for item in value:
                if hasattr(type(item), "_FIELDS"):
                    codes.extend(_error_codes(item))
    return codes
