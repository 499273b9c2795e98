"""One broker connection: framing, correlation ids, pipelining, ApiVersions and SASL.

Lifecycle: :meth:`Connection.run` is started in the owner's task group with
``await tg.start(conn.run)``; it connects, negotiates versions, authenticates, reports
started, then reads responses until the connection closes. Requests are written under a
send lock and answered by correlation id; at most ``max_in_flight`` wait at once.

Invariant: a request that is cancelled or times out after its first byte was written
leaves the pipeline's state unknown, so the connection is marked broken and closed; every
other waiter fails with a retriable :class:`KafkaConnectionError`. Nothing waits forever:
every waiter is woken by its response, by its deadline, or by the close.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from anyio.streams.tls import TLSStream

from aiokafka_lead._version import __version__
from aiokafka_lead.errors import (
    DecodeError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
    error_for_code,
)
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.sasl import SaslError, create_mechanism
from aiokafka_lead.protocol.framing import (
    FrameReader,
    decode_response,
    encode_request,
    peek_correlation_id,
)
from aiokafka_lead.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from aiokafka_lead.protocol.versions import ApiVersionTable, negotiate
from aiokafka_lead.runtime import unwrap_group

log = logging.getLogger(__name__)

UNSUPPORTED_VERSION = 35
#: frames at least this big are decoded in a worker thread (~20 ms of decoding on the loop)
THREAD_DECODE_BYTES = 256 * 1024
API_VERSIONS_MAX = 4
# Brokers validate these against [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? (KIP-511):
# an underscore makes ApiVersions fail with INVALID_REQUEST.
CLIENT_SOFTWARE_NAME = "aiokafka-lead"


def _api_name(response_cls: Any) -> str:
    """"Metadata" for MetadataResponse: the API's name in the Kafka spec."""
    return str(response_cls.__name__).removesuffix("Response")


@dataclass(slots=True)
class _Pending:
    response_cls: Any
    version: int
    done: anyio.Event = field(default_factory=anyio.Event)
    response: Any = None
    error: BaseException | None = None
    sent_at: float = 0.0
    # ApiVersions: a broker that lacks our version answers UNSUPPORTED_VERSION in v0 format
    fallback_version: int | None = None
    # the caller's own decoder of the frame (e.g. Metadata keeping only the topics asked for)
    decode: Callable[[memoryview | bytes], Any] | None = None


class _TLSFailed(Exception):
    """The TCP connection was up but the TLS handshake failed."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(repr(cause))
        self.cause = cause


class Connection:
    """A connection to one broker address (``node_id`` -1 for bootstrap servers)."""

    def __init__(
        self,
        host: str,
        port: int,
        config: ConnectionConfig,
        *,
        node_id: int = -1,
        on_latency: Callable[[int, int, float], None] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self._config = config
        self._on_latency = on_latency
        self._stream: anyio.abc.ByteStream | None = None
        self._reader = FrameReader(config.max_frame_size)
        self._pending: dict[int, _Pending] = {}
        self._correlation = itertools.count(1)
        self._send_lock = anyio.Lock()
        self._window = anyio.Semaphore(config.max_in_flight)
        self._closed = anyio.Event()
        self._close_reason: BaseException | None = None
        self._first_bytes = b""  # what the peer sent first: names a listener mismatch
        self._answered = 0  # responses received (a close before the second one hints a mismatch)
        self._unanswered_bytes = 0  # bytes received that are not yet part of a whole frame
        self.api_versions: ApiVersionTable | None = None
        #: finalized feature levels from ApiVersions v3+ (e.g. ``transaction.version``)
        self.finalized_features: dict[str, int] = {}
        self.last_used = time.monotonic()

    def __repr__(self) -> str:
        return f"<Connection node={self.node_id} {self.host}:{self.port}>"

    @property
    def broker(self) -> str:
        """The broker as errors and logs name it: "node 1 (host:9092)" or "bootstrap host:9092"."""
        if self.node_id < 0:
            return f"bootstrap {self.host}:{self.port}"
        return f"node {self.node_id} ({self.host}:{self.port})"

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    # ----------------------------------------------------------------- lifecycle
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect and handshake, report started, then read until closed.

        Connect and handshake failures propagate to the ``tg.start`` caller; later
        failures close the connection and fail its waiters, never the task group.
        """
        try:
            with anyio.fail_after(self._config.connect_timeout_ms / 1000):
                self._stream = await self._open_stream()
        except Exception as exc:  # of any kind (an OverflowError for a bad port): this node only
            if isinstance(exc, _TLSFailed):
                what = (
                    f"failed in the TLS handshake ({exc.cause!r}): is this a TLS listener "
                    f"(security_protocol={self._config.security_protocol}) and does ssl_context trust it?"
                )
            else:
                what = "timed out" if isinstance(exc, TimeoutError) else f"failed: {unwrap_group(exc)!r}"
            err = KafkaConnectionError(f"connect to {self.broker} {what}")
            self._mark_closed(err)
            raise err from exc
        started = False
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read_loop)
                try:
                    await self._handshake()
                except BaseException:
                    tg.cancel_scope.cancel()
                    raise
                task_status.started()
                started = True
        except BaseException as exc:
            # The task group wraps a handshake failure in an exception group; callers (the
            # pool) must see the KafkaError itself, e.g. a broker that died mid-handshake.
            real = unwrap_group(exc)
            if not started and isinstance(real, Exception) and not isinstance(real, KafkaError):
                # e.g. an ApiVersions answer the codec refused in an unexpected way: still
                # an ordinary connection error for this node, not a failure of the caller
                real = KafkaConnectionError(f"{self.broker}: handshake failed: {real!r}")
                self._mark_closed(real)
                raise real from exc
            self._mark_closed(real if isinstance(real, KafkaError) else KafkaConnectionError(str(real)))
            if real is not exc and isinstance(real, KafkaError):
                raise real from None
            raise
        finally:
            await self._close_stream()

    async def _open_stream(self) -> anyio.abc.ByteStream:
        stream: anyio.abc.ByteStream = await anyio.connect_tcp(self.host, self.port)
        if not self._config.uses_tls:
            return stream
        try:
            return await TLSStream.wrap(
                stream,
                ssl_context=self._config.ssl_context,
                hostname=self.host,
                standard_compatible=False,
            )
        except (OSError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            with anyio.move_on_after(1, shield=True):
                await stream.aclose()  # the TCP connection must not outlive the failed handshake
            raise _TLSFailed(exc) from exc
        except BaseException:
            with anyio.move_on_after(1, shield=True):
                await stream.aclose()
            raise

    async def _handshake(self) -> None:
        """ApiVersions (retrying with the broker's own max on UNSUPPORTED_VERSION), then SASL."""
        version = API_VERSIONS_MAX
        request = ApiVersionsRequest(
            client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=__version__
        )
        response: ApiVersionsResponse = await self.send(request, version=version, negotiate=False)
        if response.error_code == UNSUPPORTED_VERSION:
            broker_max = next(
                (k.max_version for k in response.api_keys if k.api_key == ApiVersionsRequest.API_KEY),
                0,
            )
            response = await self.send(request, version=min(broker_max, version), negotiate=False)
        if response.error_code:
            raise error_for_code(response.error_code, f"ApiVersions from {self.broker} failed")
        self.api_versions = negotiate(response)
        too_old = self.api_versions.too_old()
        if too_old is not None:
            raise UnsupportedVersionError(f"broker at {self.host}:{self.port} is too old: {too_old}")
        self.finalized_features = {f.name: f.max_version_level for f in response.finalized_features or ()}
        if self._config.uses_sasl:
            await self._authenticate()

    async def _authenticate(self) -> None:
        cfg = self._config
        assert cfg.sasl_plain_username is not None and cfg.sasl_plain_password is not None
        mechanism = create_mechanism(cfg.sasl_mechanism, cfg.sasl_plain_username, cfg.sasl_plain_password)
        hs: SaslHandshakeResponse = await self.send(SaslHandshakeRequest(mechanism=mechanism.name))
        if hs.error_code and not hs.mechanisms:
            raise UnsupportedSaslMechanismError(
                f"{self.host}:{self.port} does not use SASL (it enables no mechanism): connect to its "
                f"SASL listener, or use security_protocol 'PLAINTEXT' or 'SSL' for this one"
            )
        if hs.error_code:
            raise UnsupportedSaslMechanismError(
                f"broker does not enable SASL mechanism {mechanism.name}; enabled: {', '.join(hs.mechanisms)}"
            )
        message: bytes | None = mechanism.initial_response()
        while message is not None:
            resp: SaslAuthenticateResponse = await self.send(SaslAuthenticateRequest(auth_bytes=message))
            if resp.error_code:
                raise SaslAuthenticationFailedError(
                    f"SASL {mechanism.name} authentication as {cfg.sasl_plain_username!r} failed: "
                    f"{resp.error_message or 'no reason given'}"
                )
            try:
                message = mechanism.step(bytes(resp.auth_bytes))
            except SaslError as exc:
                raise SaslAuthenticationFailedError(str(exc)) from exc

    async def close(self, reason: BaseException | None = None) -> None:
        """Close the connection and fail every waiter."""
        await self._fail(reason or KafkaConnectionError(f"{self!r} closed"))

    async def _fail(self, reason: BaseException) -> None:
        """Mark broken and close the stream, even from a cancelled task (shielded, bounded)."""
        self._mark_closed(reason)
        with anyio.CancelScope(shield=True):
            await self._close_stream()

    async def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            with anyio.move_on_after(1, shield=True):
                await stream.aclose()

    def _mark_closed(self, reason: BaseException) -> None:
        if self._closed.is_set():
            return
        self._close_reason = reason
        self._closed.set()
        pending, self._pending = self._pending, {}
        for waiter in pending.values():
            waiter.error = KafkaConnectionError(
                f"{_api_name(waiter.response_cls)} v{waiter.version} request to {self.broker}: "
                f"the connection closed while waiting: {reason}"
            )
            waiter.done.set()
        log.debug("%r closed: %s", self, reason)

    # ------------------------------------------------------------------ requests
    def version_for(self, api_key: int) -> int:
        if self.api_versions is None:
            raise KafkaConnectionError(f"{self!r} has not negotiated API versions")
        try:
            return self.api_versions.version_for(api_key)
        except UnsupportedVersionError as exc:
            raise UnsupportedVersionError(f"{self.broker}: {exc.args[0] if exc.args else exc}") from None

    async def send(
        self,
        request: Any,
        *,
        version: int | None = None,
        timeout_ms: float | None = None,
        expect_response: bool = True,
        negotiate: bool = True,
        decode: Callable[[memoryview | bytes], Any] | None = None,
    ) -> Any:
        """Send one request and return its decoded response (None when none is expected).

        ``decode(frame)`` replaces the generated decoder (it raises DecodeError the same
        way; ``decode=bytes`` hands the frame over as it is). Without it, frames of
        ``THREAD_DECODE_BYTES`` or more are decoded in a worker thread, so a huge answer
        does not hold the event loop for its whole decoding.

        Raises KafkaConnectionError (retriable) if the connection fails, KafkaTimeoutError
        after ``timeout_ms`` (default request_timeout_ms; the connection is then closed).
        """
        if self._closed.is_set():
            raise KafkaConnectionError(f"{self!r} is closed: {self._close_reason}")
        if version is None:
            version = self.version_for(request.API_KEY) if negotiate else request.MAX_VERSION
        timeout_s = (timeout_ms if timeout_ms is not None else self._config.request_timeout_ms) / 1000
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        frame = encode_request(request, version, correlation_id, self._config.client_id)
        pending = _Pending(request.RESPONSE_CLASS, version, decode=decode) if expect_response else None
        if pending is not None and request.API_KEY == ApiVersionsRequest.API_KEY and version > 0:
            pending.fallback_version = 0
        self.last_used = time.monotonic()
        async with self._window:
            written = False
            try:
                with anyio.fail_after(timeout_s):
                    async with self._send_lock:
                        stream = self._stream
                        if stream is None or self._closed.is_set():
                            raise KafkaConnectionError(f"{self!r} is closed: {self._close_reason}")
                        if pending is not None:
                            self._pending[correlation_id] = pending
                            pending.sent_at = time.monotonic()
                        written = True
                        await stream.send(frame)
                    if pending is None:
                        return None
                    await pending.done.wait()
            except TimeoutError:
                err = KafkaTimeoutError(
                    f"{_api_name(request.RESPONSE_CLASS)} v{version} request to {self.broker} timed out: "
                    f"no answer within {timeout_s * 1000:.0f} ms; its connection is closed"
                )
                await self._fail(err)
                raise err from None
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                err2 = KafkaConnectionError(f"{self!r} failed while sending: {exc!r}")
                await self._fail(err2)
                raise err2 from exc
            except BaseException:
                if written:  # cancelled mid-pipeline: ordering is unknown now
                    await self._fail(KafkaConnectionError(f"{self!r}: request cancelled in flight"))
                raise
        if pending.error is not None:
            raise pending.error
        if self._on_latency is not None:
            self._on_latency(self.node_id, request.API_KEY, time.monotonic() - pending.sent_at)
        return pending.response

    # ------------------------------------------------------------------- reading
    async def _read_loop(self) -> None:
        stream = self._stream
        assert stream is not None
        try:
            while not self._closed.is_set():
                data = await stream.receive(256 * 1024)
                if len(self._first_bytes) < 8:
                    self._first_bytes += data[: 8 - len(self._first_bytes)]
                self._unanswered_bytes += len(data)
                for frame in self._reader.feed(data):
                    self._unanswered_bytes -= len(frame) + 4
                    if len(frame) >= THREAD_DECODE_BYTES:
                        await self._dispatch_big(frame)
                    else:
                        self._dispatch(frame)
        except anyio.EndOfStream:
            reason = f"the broker closed the connection{self._hint(closed=True)}"
            self._mark_closed(KafkaConnectionError(reason))
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._mark_closed(KafkaConnectionError(f"read from {self.broker} failed: {exc!r}"))
        except DecodeError as exc:
            reason = f"malformed frame from {self.broker}: {exc}{self._hint(closed=False)}"
            self._mark_closed(KafkaConnectionError(reason))

    def _hint(self, *, closed: bool) -> str:
        """Why a connection may have failed this early: the listener expects something else."""
        first = self._first_bytes
        protocol = self._config.security_protocol
        if len(first) >= 2 and first[0] in (0x15, 0x16) and first[1] == 3:
            return f" (it answered with TLS: use security_protocol 'SSL' or 'SASL_SSL', not {protocol})"
        if first and self._answered == 0 and all(32 <= b < 127 for b in first[:4]):
            return f" (it answered {first.decode('ascii', 'replace')!r}...: not a Kafka listener)"
        if closed and self._unanswered_bytes:
            # it had begun an answer: a broker that failed or a cut network, not a listener
            # that refused our request (that one closes without a byte)
            return f" in the middle of a response ({self._unanswered_bytes} bytes of it received)"
        if closed and self._answered <= 1:
            return (
                f" before answering a request after ApiVersions; a listener that expects SASL or TLS "
                f"does this: check security_protocol (now {protocol})"
            )
        return ""

    def _waiter_for(self, frame: bytes | memoryview) -> _Pending:
        self._answered += 1
        correlation_id = peek_correlation_id(frame)
        waiter = self._pending.pop(correlation_id, None)
        if waiter is None:
            raise DecodeError(f"response with unknown correlation id {correlation_id}")
        return waiter

    def _dispatch(self, frame: bytes | memoryview) -> None:
        waiter = self._waiter_for(frame)
        self._decode(waiter, frame)
        waiter.done.set()

    async def _dispatch_big(self, frame: bytes | memoryview) -> None:
        """The generated decoders in a worker thread; a caller's own decoder (which may be
        cooperative, like Metadata's) here."""
        waiter = self._waiter_for(frame)
        if waiter.decode is None:
            await anyio.to_thread.run_sync(self._decode, waiter, frame, abandon_on_cancel=True)
        else:
            self._decode(waiter, frame)
        waiter.done.set()

    def _decode(self, waiter: _Pending, frame: bytes | memoryview) -> None:
        """Fill in the waiter's response or error (runs in a worker thread for big frames)."""
        try:
            if waiter.decode is not None:
                waiter.response = waiter.decode(frame)
            else:
                _, waiter.response = decode_response(frame, waiter.response_cls, waiter.version)
        except DecodeError as exc:
            # the frame boundary is intact: only this request failed
            api = _api_name(waiter.response_cls)
            waiter.error = DecodeError(f"{api} v{waiter.version} response from {self.broker}: {exc}")
            if waiter.fallback_version is not None:
                try:
                    _, waiter.response = decode_response(frame, waiter.response_cls, waiter.fallback_version)
                    waiter.error = None
                except DecodeError:
                    pass
