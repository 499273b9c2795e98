"""Connection: handshake, pipelining, the in-flight window and failure handling."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest

from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import DecodeError, KafkaConnectionError, KafkaTimeoutError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import MetadataRequest, MetadataResponse
from tests.support.script_server import ScriptServer, script_server


def metadata(cluster_id: str) -> MetadataResponse:
    return MetadataResponse(cluster_id=cluster_id, controller_id=1)


@asynccontextmanager
async def connected(server: ScriptServer, **config: Any) -> AsyncIterator[Connection]:
    conn = Connection("127.0.0.1", server.port, ConnectionConfig(**config), node_id=1)
    async with anyio.create_task_group() as tg:
        await tg.start(conn.run)
        try:
            yield conn
        finally:
            await conn.close()


async def send_noting_the_close(conn: Connection, errors: list[BaseException]) -> None:
    """A request with a long timeout: the error its connection's close gives it goes to ``errors``."""
    try:
        await conn.send(MetadataRequest(topics=None), timeout_ms=10_000)
    except KafkaConnectionError as exc:
        errors.append(exc)


async def echo(header: RequestHeader, request: Any) -> Any:
    return metadata(f"c{header.correlation_id}")


async def test_handshake_negotiates_versions() -> None:
    with anyio.fail_after(5):
        async with script_server(echo) as server, connected(server) as conn:
            assert conn.version_for(MetadataRequest.API_KEY) == 13
            response = await conn.send(MetadataRequest(topics=None))
            assert response.cluster_id == f"c{server.received[0][0].correlation_id}"


async def test_pipelined_responses_out_of_order_reach_their_callers() -> None:
    release = anyio.Event()

    async def reversed_answers(header: RequestHeader, request: Any) -> Any:
        if header.correlation_id == 2:  # the first request waits until the others were answered
            await release.wait()
        elif header.correlation_id == 4:
            release.set()
        return metadata(f"c{header.correlation_id}")

    results: dict[int, str] = {}
    with anyio.fail_after(5):
        async with script_server(reversed_answers) as server, connected(server) as conn:

            async def call(i: int) -> None:
                results[i] = (await conn.send(MetadataRequest(topics=None))).cluster_id

            async with anyio.create_task_group() as tg:
                for i in range(3):
                    tg.start_soon(call, i)
                    await server.wait_for_requests(i + 1)
    assert results == {0: "c2", 1: "c3", 2: "c4"}


async def test_in_flight_window_bounds_requests_on_the_wire() -> None:
    gate = anyio.Event()

    async def held(header: RequestHeader, request: Any) -> Any:
        await gate.wait()
        return metadata("ok")

    with anyio.fail_after(5):
        async with script_server(held) as server, connected(server, max_in_flight=2) as conn:
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(conn.send, MetadataRequest(topics=None))
                await server.wait_for_requests(2)
                await anyio.wait_all_tasks_blocked()
                assert len(server.received) == 2  # the third waits for a slot
                gate.set()
            assert len(server.received) == 3


async def test_timeout_closes_connection_and_fails_other_waiters() -> None:
    async def never(header: RequestHeader, request: Any) -> Any:
        return None

    errors: list[BaseException] = []
    with anyio.fail_after(5):
        async with script_server(never) as server, connected(server, request_timeout_ms=300) as conn:
            async with anyio.create_task_group() as tg:
                tg.start_soon(send_noting_the_close, conn, errors)
                await server.wait_for_requests(1)
                with pytest.raises(KafkaTimeoutError, match="timed out"):
                    await conn.send(MetadataRequest(topics=None))
            assert conn.closed
    assert len(errors) == 1 and "closed while waiting" in str(errors[0])


async def test_truncated_frame_then_silence_times_out_cleanly() -> None:
    async def half_a_frame(header: RequestHeader, request: Any) -> Any:
        return b"\x00\x00\x00\x08\x00\x00"  # 2 of 8 announced bytes, then nothing

    with anyio.fail_after(5):
        async with script_server(half_a_frame) as server, connected(server, request_timeout_ms=300) as conn:
            with pytest.raises(KafkaTimeoutError):
                await conn.send(MetadataRequest(topics=None))
            assert conn.closed


async def test_malformed_body_fails_only_that_request() -> None:
    async def garbled(header: RequestHeader, request: Any) -> Any:
        if len(garbled_calls) == 0:
            garbled_calls.append(1)
            body = struct.pack(">i", header.correlation_id) + b"\xff\xff\xff\xff\xff"
            return struct.pack(">i", len(body)) + body
        return metadata("fine")

    garbled_calls: list[int] = []
    with anyio.fail_after(5):
        async with script_server(garbled) as server, connected(server) as conn:
            with pytest.raises(DecodeError):
                await conn.send(MetadataRequest(topics=None))
            assert not conn.closed  # framing is intact: the connection stays usable
            assert (await conn.send(MetadataRequest(topics=None))).cluster_id == "fine"
            assert server.connections == 1


@pytest.mark.parametrize(
    "frame",
    [
        struct.pack(">ii", 8, 999_999) + b"\x00" * 4,  # a correlation id nobody waits for
        struct.pack(">i", -5),  # negative frame size
        struct.pack(">i", 0x7FFFFFFF),  # hostile frame size
    ],
    ids=["unknown-correlation-id", "negative-size", "hostile-size"],
)
async def test_protocol_violations_close_the_connection(frame: bytes) -> None:
    async def bad(header: RequestHeader, request: Any) -> Any:
        return frame

    with anyio.fail_after(5):
        async with script_server(bad) as server, connected(server, max_frame_size=1 << 20) as conn:
            with pytest.raises(KafkaConnectionError):
                await conn.send(MetadataRequest(topics=None))
            assert conn.closed
            with pytest.raises(KafkaConnectionError, match="is closed"):
                await conn.send(MetadataRequest(topics=None))


async def test_connect_refused_is_a_retriable_connection_error() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()
    conn = Connection("127.0.0.1", port, ConnectionConfig())
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            with pytest.raises(KafkaConnectionError, match="failed") as info:
                await tg.start(conn.run)
    assert info.value.retriable and conn.closed


async def test_api_versions_fallback_when_broker_lacks_our_version() -> None:
    """An older broker answers ApiVersions v4 with UNSUPPORTED_VERSION in v0 format; the
    client retries at the broker's highest ApiVersions version."""
    from aiokafka_lead.protocol.framing import decode_request, encode_response
    from aiokafka_lead.protocol.messages import ApiVersionsResponse
    from tests.support.script_server import api_versions_response

    seen_versions: list[int] = []

    async def serve(stream: anyio.abc.SocketStream) -> None:
        from aiokafka_lead.protocol.framing import FrameReader

        reader = FrameReader()
        async with stream:
            while True:
                try:
                    data = await stream.receive()
                except anyio.EndOfStream:
                    return
                for frame in reader.feed(data):
                    header, _ = decode_request(frame)
                    seen_versions.append(header.api_version)
                    if header.api_version > 2:
                        old = ApiVersionsResponse(
                            error_code=E.UNSUPPORTED_VERSION,
                            api_keys=[
                                ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=2)
                            ],
                        )
                        await stream.send(encode_response(old, 0, header.correlation_id))
                    else:
                        await stream.send(
                            encode_response(
                                api_versions_response(), header.api_version, header.correlation_id
                            )
                        )

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    with anyio.fail_after(5):
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, serve)
            conn = Connection("127.0.0.1", port, ConnectionConfig())
            async with anyio.create_task_group() as ctg:
                await ctg.start(conn.run)
                assert conn.version_for(MetadataRequest.API_KEY) == 13
                await conn.close()
            tg.cancel_scope.cancel()
    assert seen_versions == [4, 2]
