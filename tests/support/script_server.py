"""A scripted single-broker server for connection-level tests, and wire-level faults.

It answers ApiVersions itself (advertising what the client supports, except the KIP-714
telemetry APIs: a broker without a receiver plugin) and hands every
other request to a handler, which returns a response, ``None`` (never answer), raw
bytes to write as they are (to send malformed frames), or a :class:`Hangup` (bytes, then a
closed connection). The fault transforms at the end
(a wrong correlation id, another API's body, trailing bytes, an oversized frame) turn a
good encoded answer into a bad one; ``wire_fault`` makes each of them, and a cut, a stall,
garbage and a closed connection, a FakeCluster interceptor action. Lies in the fields of an
answer are in :mod:`tests.support.lies`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from aiokafka_lead.protocol.framing import FrameReader, RequestHeader, decode_request, encode_response
from aiokafka_lead.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from aiokafka_lead.protocol.versions import CLIENT_VERSIONS
from aiokafka_lead.runtime import unwrap_group

Handler = Callable[[RequestHeader, Any], Awaitable[Any]]


@dataclass(frozen=True)
class Hangup:
    """A handler's answer: write ``data`` (maybe a part of a frame), then close the connection."""

    data: bytes = b""


#: GetTelemetrySubscriptions, PushTelemetry
TELEMETRY_APIS = frozenset({71, 72})


def api_versions_response() -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=0,
        api_keys=[
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(CLIENT_VERSIONS.items())
            if k not in TELEMETRY_APIS
        ],
    )


@dataclass
class ScriptServer:
    handler: Handler
    port: int = 0
    received: list[tuple[RequestHeader, Any]] = field(default_factory=list)
    connections: int = 0
    request_seen: anyio.Event = field(default_factory=anyio.Event)
    send_lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def serve(self, stream: anyio.abc.SocketStream) -> None:
        self.connections += 1
        reader = FrameReader()
        async with stream, anyio.create_task_group() as tg:
            try:
                while True:
                    data = await stream.receive()
                    for frame in reader.feed(data):
                        header, request = decode_request(frame)
                        if isinstance(request, ApiVersionsRequest):
                            async with self.send_lock:
                                await stream.send(
                                    encode_response(
                                        api_versions_response(), header.api_version, header.correlation_id
                                    )
                                )
                            continue
                        self.received.append((header, request))
                        self.request_seen.set()
                        self.request_seen = anyio.Event()
                        tg.start_soon(self._answer, stream, header, request)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                tg.cancel_scope.cancel()

    async def _answer(self, stream: anyio.abc.SocketStream, header: RequestHeader, request: Any) -> None:
        response = await self.handler(header, request)
        if response is None:
            return
        if isinstance(response, Hangup):
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                async with self.send_lock:
                    if response.data:
                        await stream.send(response.data)
                    await stream.aclose()
            return
        payload = (
            response
            if isinstance(response, bytes)
            else encode_response(response, header.api_version, header.correlation_id)
        )
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            async with self.send_lock:
                await stream.send(payload)

    async def wait_for_requests(self, count: int) -> None:
        while len(self.received) < count:
            await self.request_seen.wait()


@asynccontextmanager
async def script_server(handler: Handler) -> AsyncIterator[ScriptServer]:
    server = ScriptServer(handler)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    try:
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, server.serve)
            yield server
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # the body's own error, not wrapped by our task group
        real = unwrap_group(group)
        if real is group:
            raise
        raise real from real.__cause__


# ------------------------------------------------------------------ wire-level faults
# Transforms of an encoded response frame (size prefix, correlation id, header, body): what
# a broken or hostile broker puts on the wire instead of a good answer. They serve both a
# ScriptServer handler (return the bytes) and a FakeCluster interceptor (``wire_fault``).


def reframe(frame: bytes, payload: bytes) -> bytes:
    """``payload`` (correlation id onwards) with a correct size prefix."""
    return len(payload).to_bytes(4, "big") + payload


def wrong_correlation_id(frame: bytes) -> bytes:
    """The same answer for a request that was never sent."""
    cid = (int.from_bytes(frame[4:8], "big") + 1000) & 0x7FFFFFFF
    return reframe(frame, cid.to_bytes(4, "big") + frame[8:])


def trailing_bytes(frame: bytes) -> bytes:
    """The answer with bytes after its body."""
    return reframe(frame, frame[4:] + b"\x00\x01\x02")


def body_of_another_api(frame: bytes) -> bytes:
    """Another API's answer (an ApiVersions v0 body) under this request's correlation id."""
    other = ApiVersionsResponse(error_code=0, api_keys=[]).encode(0)
    return reframe(frame, frame[4:8] + other)


def oversized_frame(frame: bytes) -> bytes:
    """A size prefix far above the client's frame limit."""
    return (2**31 - 1).to_bytes(4, "big") + frame[4:]


def wire_fault(name: str) -> Any:
    """A FakeCluster interceptor action for one wire fault (see ``WIRE_FAULTS``)."""
    from aiokafka_lead.testing.fake import Close, Corrupt, Drop, Rewrite, Truncate

    transforms = {
        "wrong-correlation-id": wrong_correlation_id,
        "trailing-bytes": trailing_bytes,
        "another-api": body_of_another_api,
        "oversized-frame": oversized_frame,
    }
    if name in transforms:
        transform = transforms[name]
        return Rewrite(lambda response, frame: transform(frame))
    return {
        "cut": Truncate(11),
        "cut-header": Truncate(6),
        "stall": Drop(),
        "garbage": Corrupt(),
        "closed": Close(),
    }[name]


WIRE_FAULTS = (
    "cut",
    "cut-header",
    "stall",
    "garbage",
    "closed",
    "wrong-correlation-id",
    "trailing-bytes",
    "another-api",
    "oversized-frame",
)
