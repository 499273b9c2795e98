"""One fake broker: a loopback listener, a read-dispatch-write loop per connection.

Like a real broker, each connection is served one request at a time (Kafka mutes a
channel while a request is in flight), so a long-polling Fetch or a Delay holds up only
its own connection. Requests are logged before interceptors see them.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import DecodeError, UnsupportedVersionError
from aiokafka_lead.protocol.framing import (
    FrameReader,
    RequestHeader,
    decode_request,
    encode_response,
    peek_request_header,
)
from aiokafka_lead.protocol.messages import ApiVersionsResponse, Request, Response
from aiokafka_lead.testing.fake.handlers import HANDLERS, SUPPORTED
from aiokafka_lead.testing.fake.intercept import (
    Close,
    Corrupt,
    Delay,
    Drop,
    Error,
    Respond,
    Rewrite,
    Truncate,
    error_response,
)
from aiokafka_lead.testing.fake.log import RequestRecord

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.view import ClusterView

log = logging.getLogger(__name__)

API_VERSIONS = 18
_STREAM_ERRORS = (
    anyio.EndOfStream,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)


class _CloseConnection(Exception):
    """Raised inside the connection loop to hang up on the client."""


class FakeBroker:
    def __init__(
        self, cluster: ClusterView, node_id: int, host: str, max_versions: dict[int, int]
    ) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.host = host
        self.port = 0
        self.rack: str | None = None
        self.max_versions = max_versions
        self._scope: anyio.CancelScope | None = None
        self._done: anyio.Event | None = None

    def __repr__(self) -> str:
        return f"<FakeBroker {self.node_id} {self.host}:{self.port}>"

    @property
    def running(self) -> bool:
        return self._scope is not None

    def version_range(self, api_key: int) -> tuple[int, int] | None:
        rng = SUPPORTED.get(api_key)
        if rng is None:
            return None
        cap = self.max_versions.get(api_key)
        high = rng[1] if cap is None else min(rng[1], cap)
        return None if high < rng[0] else (rng[0], high)

    def api_versions(self) -> list[ApiVersionsResponse.ApiVersion]:
        out = []
        for key in sorted(SUPPORTED):
            rng = self.version_range(key)
            if rng is not None:
                out.append(
                    ApiVersionsResponse.ApiVersion(
                        api_key=key, min_version=rng[0], max_version=rng[1]
                    )
                )
        return out

    # ------------------------------------------------------------------ lifecycle
    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen until stopped; reports started once the port is bound."""
        self._done = anyio.Event()
        try:
            with anyio.CancelScope() as scope:
                listener = await anyio.create_tcp_listener(
                    local_host=self.host, local_port=self.port
                )
                self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
                self._scope = scope
                async with listener, anyio.create_task_group() as tg:
                    task_status.started()
                    await listener.serve(self._serve_connection, task_group=tg)
        finally:
            self._scope = None
            self._done.set()

    async def stop(self) -> None:
        """Close the listener and every connection; returns once all are gone."""
        scope, done = self._scope, self._done
        if scope is None or done is None:
            return
        scope.cancel()
        await done.wait()

    # ---------------------------------------------------------------- connections
    async def _serve_connection(self, stream: anyio.abc.SocketStream) -> None:
        reader = FrameReader()
        async with stream:
            try:
                while True:
                    data = await stream.receive()
                    for frame in reader.feed(data):
                        await self._serve_frame(stream, bytes(frame))
            except DecodeError as exc:  # the client sent something a broker cannot parse
                self.cluster.protocol_errors.append(exc)
            except (_CloseConnection, *_STREAM_ERRORS):
                return
            except Exception as exc:  # a bug in the fake: record it, hang up
                log.exception("fake broker %d failed on a request", self.node_id)
                self.cluster.handler_errors.append(exc)

    async def _serve_frame(self, stream: anyio.abc.SocketStream, frame: bytes) -> None:
        head = peek_request_header(frame)
        rng = self.version_range(head.api_key)
        if rng is None or not rng[0] <= head.api_version <= rng[1]:
            self._log(head, None)
            if head.api_key != API_VERSIONS:
                self.cluster.protocol_errors.append(
                    UnsupportedVersionError(
                        f"node {self.node_id}: api key {head.api_key} v{head.api_version} "
                        f"is not advertised (range {rng})"
                    )
                )
                raise _CloseConnection  # what Java brokers do with an unparseable request
            # Like Java brokers (KIP-511): a v0 body naming only ApiVersions' own range.
            own = [k for k in self.api_versions() if k.api_key == API_VERSIONS]
            body = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=own)
            await stream.send(encode_response(body, 0, head.correlation_id))
            return
        header, request = decode_request(frame)
        self._log(header, request)
        action = self.cluster.interceptors.consult(self.node_id, header, request)
        if isinstance(action, Delay):
            await anyio.sleep(action.seconds)
            action = None
        response: Response | None
        if isinstance(action, Close):
            raise _CloseConnection
        if isinstance(action, Drop):
            return
        if isinstance(action, Respond):
            response = action.response
        elif isinstance(action, Error):
            await anyio.sleep(action.after_s)
            response = error_response(request, header.api_version, action.error_code)
        else:
            response = await self.handle(header, request)
        if response is None:
            return  # acks=0
        data = encode_response(response, header.api_version, header.correlation_id)
        if isinstance(action, Rewrite):
            rewritten = action.fn(response, data)
            if rewritten is None:
                return
            data = (
                rewritten
                if isinstance(rewritten, bytes)
                else encode_response(rewritten, header.api_version, header.correlation_id)
            )
        if isinstance(action, Truncate):
            await stream.send(data[: max(action.n_bytes, 0)])
            raise _CloseConnection
        if isinstance(action, Corrupt):
            data = _garble(data, type(response).header_version(header.api_version))
        await stream.send(data)

    async def handle(self, header: RequestHeader, request: Request) -> Response | None:
        handler = HANDLERS[header.api_key]
        return await handler(self.cluster, self.node_id, header, request)

    def _log(self, header: RequestHeader, request: Request | None) -> None:
        self.cluster.log_request(
            RequestRecord(
                time=time.monotonic(),
                node_id=self.node_id,
                api_key=header.api_key,
                api_version=header.api_version,
                correlation_id=header.correlation_id,
                client_id=header.client_id,
                request=request,
            )
        )


def _garble(data: bytes, header_version: int) -> bytes:
    """Keep the size prefix, correlation id and header tags; invert the body, add junk."""
    keep = 8 + (1 if header_version >= 1 else 0)
    body = bytes(b ^ 0xFF for b in data[keep:]) + b"\xde\xad\xbe\xef"
    return (keep - 4 + len(body)).to_bytes(4, "big") + data[4:keep] + body
