"""One broker connection: framing, correlation ids, pipelining, ApiVersions and SASL.

Lifecycle: :meth:`Connection.run` is started in the owner's task group with
``await tg.start(conn.run)``; it connects, negotiates versions, authenticates, reports
started, then reads responses until the connection closes. Requests are written under a
send lock and answered by correlation id; at most ``max_in_flight`` wait at once.

KIP-368: when the broker limits the SASL session (``SessionLifetimeMs``), the connection
re-authenticates before it ends, between requests: new requests wait at a gate, the ones in
flight are answered, SaslHandshake and SaslAuthenticate run again (with a fresh token from
the OAUTHBEARER provider), then the gate opens. No request fails or changes order.

Invariant: a request that is cancelled or times out after its first byte was written
leaves the pipeline's state unknown, so the connection is marked broken and closed; every
other waiter fails with a retriable :class:`KafkaConnectionError`. Nothing waits forever:
every waiter is woken by its response, by its deadline, or by the close.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import math
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread

from aiokafka_lead._version import __version__
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import (
    DecodeError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    UnsupportedVersionError,
    error_for_code,
)
from aiokafka_lead.network.authenticate import (
    MIN_REAUTH_INTERVAL_S,
    authenticate,
    new_mechanism,
    reauth_delay_s,
)
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.diagnose import early_close_hint
from aiokafka_lead.network.metrics import ConnectionStats
from aiokafka_lead.network.sasl import SaslMechanism
from aiokafka_lead.network.stream import FrameStream, TLSHandshakeFailed, open_frame_stream
from aiokafka_lead.protocol.framing import (
    THREAD_DECODE_BYTES,
    OutFrame,
    WireRequest,
    decode_response,
    encode_request,
    frame_size,
    peek_correlation_id,
)
from aiokafka_lead.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from aiokafka_lead.protocol.versions import ApiVersionTable, negotiate
from aiokafka_lead.runtime import unwrap_group
from aiokafka_lead.wakeup import Alarm, Wakeup, asyncio_loop

log = logging.getLogger(__name__)

API_VERSIONS_MAX = 4
# Brokers validate these against [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? (KIP-511):
# an underscore makes ApiVersions fail with INVALID_REQUEST.
CLIENT_SOFTWARE_NAME = "aiokafka-lead"
#: ``on_answer(response, None)`` or ``on_answer(None, error)`` (:meth:`Connection.submit`)
OnAnswer = Callable[[Any, "KafkaError | None"], None]

#: the broker the current task last sent a request to, as errors name it (``Connection.broker``):
#: an operation that ends without an answer, or with per-item errors, says which broker it was.
#: Per task, so concurrent calls of one client never mix their brokers.
request_broker: ContextVar[str | None] = ContextVar("aiokafka_lead_request_broker", default=None)


def _api_name(response_cls: Any) -> str:
    """ "Metadata" for MetadataResponse: the API's name in the Kafka spec."""
    return str(response_cls.__name__).removesuffix("Response")


@dataclass(slots=True)
class _Pending:
    response_cls: Any
    version: int
    done: Wakeup | None = None  # send(): its task waits on it (submit() makes none)
    response: Any = None
    error: KafkaError | None = None
    sent_at: float = 0.0
    # submit(): called once with the outcome instead of a task waiting on ``done``
    on_answer: OnAnswer | None = None
    correlation_id: int = 0
    deadline: float = 0.0  # submit(): the loop time its answer is due by
    timeout_ms: float = 0.0
    settled: bool = False
    # ApiVersions: a broker that lacks our version answers UNSUPPORTED_VERSION in v0 format
    fallback_version: int | None = None
    # the caller's own decoder of the frame (e.g. Metadata keeping only the topics asked for)
    decode: Callable[[memoryview | bytes], Any] | None = None


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
        stats: ConnectionStats | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self._config = config
        self._on_latency = on_latency
        self._stream: FrameStream | None = None
        self._pending: dict[int, _Pending] = {}
        self._correlation = itertools.count(1)
        # fast_acquire: an uncontended acquire does not yield to the event loop; every
        # request passes both, and two extra loop turns per request cost more CPU than the
        # rest of its way to the socket
        self._send_lock = anyio.Lock(fast_acquire=True)
        self._window = anyio.Semaphore(config.max_in_flight, fast_acquire=True)
        self._closed = anyio.Event()
        self._close_reason: BaseException | None = None
        self._answered = 0  # responses received (a close before the second one hints a mismatch)
        self.api_versions: ApiVersionTable | None = None
        #: finalized feature levels from ApiVersions v3+ (e.g. ``transaction.version``)
        self.finalized_features: dict[str, int] = {}
        #: how long the ApiVersions exchange took: a round trip the broker answers at once,
        #: so the network's share of a request's latency (producer/lanes.py); None before it
        self.handshake_s: float | None = None
        self.last_used = time.monotonic()
        self.stats = stats if stats is not None else ConnectionStats()
        #: re-authentications of this connection (KIP-368)
        self.reauthentications = 0
        self._reauth_at: float | None = None  # monotonic time to re-authenticate at
        self._gate: anyio.Event | None = None  # set while re-authenticating: new requests wait
        self._active = 0  # requests past the gate and not finished
        self._idle: anyio.Event | None = None  # set when _active drops to 0 during a gate
        self._auth_started = 0.0  # monotonic time the last (re-)authentication began
        # submit()'s requests share one loop timer, armed for the earliest deadline it knows
        # of: a timer per request would be created and cancelled at every answer
        self._alarm = Alarm(self._on_alarm)
        self._counted = 0  # of the stream's received bytes, in stats.bytes_in

    def __repr__(self) -> str:
        return f"<Connection node={self.node_id} {self.host}:{self.port}>"

    @functools.cached_property
    def broker(self) -> str:
        """The broker as errors and logs name it: "node 1 (host:9092)" or "bootstrap host:9092"."""
        if self.node_id < 0:
            return f"bootstrap {self.host}:{self.port}"
        return f"node {self.node_id} ({self.host}:{self.port})"

    @property
    def closed(self) -> bool:
        return self._close_reason is not None  # set with _closed (_mark_closed)

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
            self.stats.created += 1
        except Exception as exc:  # of any kind (an OverflowError for a bad port): this node only
            if isinstance(exc, TLSHandshakeFailed):
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
                if self._reauth_at is not None:
                    tg.start_soon(self._reauth_loop)
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

    async def _open_stream(self) -> FrameStream:
        config = self._config
        ssl_context = config.ssl_context if config.uses_tls else None
        return await open_frame_stream(self.host, self.port, ssl_context, config.max_frame_size)

    async def _handshake(self) -> None:
        """ApiVersions (retrying with the broker's own max on UNSUPPORTED_VERSION), then SASL."""
        version = API_VERSIONS_MAX
        request = ApiVersionsRequest(
            client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=__version__
        )
        started = time.monotonic()
        response: ApiVersionsResponse = await self.send(request, version=version, negotiate=False)
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION:
            broker_max = next(
                (k.max_version for k in response.api_keys if k.api_key == ApiVersionsRequest.API_KEY),
                0,
            )
            started = time.monotonic()
            response = await self.send(request, version=min(broker_max, version), negotiate=False)
        self.handshake_s = time.monotonic() - started
        if response.error_code:
            raise error_for_code(response.error_code, f"ApiVersions from {self.broker} failed")
        self.api_versions = negotiate(response)
        too_old = self.api_versions.too_old()
        if too_old is not None:
            raise UnsupportedVersionError(f"broker at {self.host}:{self.port} is too old: {too_old}")
        self.finalized_features = {f.name: f.max_version_level for f in response.finalized_features or ()}
        if self._config.uses_sasl:
            try:
                await self._authenticate()
            except Exception:
                self.stats.failed_authentications += 1
                raise
            self.stats.authentications += 1

    async def _authenticate(self, mechanism: SaslMechanism | None = None) -> None:
        started = self._auth_started = time.monotonic()
        lifetime_ms = await authenticate(self._send_now, self._config, self.host, self.broker, mechanism)
        self._reauth_at = started + reauth_delay_s(lifetime_ms) if lifetime_ms > 0 else None

    async def _send_now(self, request: Any) -> Any:
        """A request of the SASL exchange: not held at the re-authentication gate."""
        return await self.send(request, gated=False)

    async def _reauth_loop(self) -> None:
        """KIP-368: re-authenticate before each session ends, for as long as the connection lives."""
        while self._reauth_at is not None:
            with anyio.move_on_after(max(self._reauth_at - time.monotonic(), 0)):
                await self._closed.wait()
            if self._closed.is_set():
                return
            try:
                await self._reauthenticate()
            except Exception as exc:  # of any kind: this connection only
                self.stats.failed_reauthentications += 1
                if not self._closed.is_set():
                    log.warning("%s: re-authentication failed, closing the connection: %s", self.broker, exc)
                    reason = exc if isinstance(exc, KafkaError) else KafkaConnectionError(repr(exc))
                    await self._fail(reason)
                return

    async def _reauthenticate(self) -> None:
        """Close the gate, let the requests in flight finish, authenticate again, open the gate.

        The token is fetched first, while requests still flow (a slow identity provider holds
        nothing up); if that fails, the requests in flight are still answered before the
        connection closes."""
        failure: Exception | None = None
        mechanism: SaslMechanism | None = None
        try:
            mechanism = await new_mechanism(self._config, self.host, self.broker)
        except Exception as exc:  # raised below, once nothing is in flight
            failure = exc
        gate = self._gate = anyio.Event()
        try:
            if self._active:  # bounded: every request in flight has a deadline of its own
                self._idle = anyio.Event()
                await self._idle.wait()
            if failure is not None:
                raise failure
            # a short session (a token about to expire) must not make the broker refuse us
            await anyio.sleep(max(self._auth_started + MIN_REAUTH_INTERVAL_S - time.monotonic(), 0))
            await self._authenticate(mechanism)  # each of its requests bounded by request_timeout_ms
        finally:
            self._gate = self._idle = None
            gate.set()
        self.reauthentications += 1
        self.stats.reauthentications += 1
        log.debug("%s: re-authenticated (%d so far)", self.broker, self.reauthentications)

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
        self._alarm.cancel()
        if self._stream is not None:
            self.stats.closed += 1
        pending, self._pending = self._pending, {}
        for waiter in pending.values():
            waiter.error = KafkaConnectionError(
                f"{_api_name(waiter.response_cls)} v{waiter.version} request to {self.broker}: "
                f"the connection closed while waiting: {reason}"
            )
            self._settle(waiter)
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
        gated: bool = True,
    ) -> Any:
        """Send one request and return its decoded response (None when none is expected).
        A :class:`WireRequest` writes its own frame and decodes its own answer.

        ``decode(frame)`` replaces the generated decoder (it raises DecodeError the same
        way; ``decode=bytes`` hands the frame over as it is). Without it, frames of
        ``THREAD_DECODE_BYTES`` or more are decoded in a worker thread, so a huge answer
        does not hold the event loop for its whole decoding. ``gated=False`` is for the
        requests of the SASL exchange itself: they do not wait at the re-authentication
        gate, and they count neither as use nor as requests in flight.

        Raises KafkaConnectionError (retriable) if the connection fails, KafkaTimeoutError
        after ``timeout_ms`` (default request_timeout_ms; the connection is then closed).
        """
        timeout_s = (timeout_ms if timeout_ms is not None else self._config.request_timeout_ms) / 1000
        request_broker.set(self.broker)
        if gated:
            if self._gate is not None:  # re-authenticating: wait for the gate to open
                await self._pass_gate(request, timeout_s)
            self._active += 1
        try:
            if self._closed.is_set():
                raise KafkaConnectionError(f"{self!r} is closed: {self._close_reason}")
            if version is None:
                version = self.version_for(request.API_KEY) if negotiate else request.MAX_VERSION
            correlation_id = next(self._correlation) & 0x7FFFFFFF
            frame, own_decode = self._encode(request, version, correlation_id)
            if decode is None:
                decode = own_decode
            done = Wakeup()
            pending = (
                _Pending(request.RESPONSE_CLASS, version, done, decode=decode) if expect_response else None
            )
            if pending is not None and request.API_KEY == ApiVersionsRequest.API_KEY and version > 0:
                pending.fallback_version = 0
            if gated:
                self.last_used = time.monotonic()
            async with self._window:
                written = False
                deadline = time.monotonic() + timeout_s
                try:
                    stream = self._free_stream()
                    if stream is not None and stream.write_nowait(frame):
                        # the common case: nothing to wait for but the answer, so no cancel
                        # scope (its cost is per request)
                        written = self._expect(correlation_id, pending)
                    else:
                        with anyio.fail_after(timeout_s):
                            async with self._send_lock:
                                stream = self._stream
                                if stream is None or self._closed.is_set():
                                    raise KafkaConnectionError(f"{self!r} is closed: {self._close_reason}")
                                written = self._expect(correlation_id, pending)
                                await stream.send(frame)
                    self._count_out(frame_size(frame))
                    if pending is None:
                        return None
                    if not await done.wait(deadline - time.monotonic()):
                        raise TimeoutError
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
            self._answered_in(pending, request.API_KEY)
            return pending.response
        finally:
            if gated:
                self._leave()

    def submit(self, request: Any, *, version: int, timeout_ms: float, on_answer: OnAnswer) -> bool:
        """Send ``request`` without waiting for anything, when nothing stands in its way (on
        asyncio, no re-authentication under way, room in the window, the socket's buffer
        with room and no write waiting for it): True, and ``on_answer`` is then called exactly
        once, from the read loop, the close or the timeout, with the response or with the error
        :meth:`send` would raise. False, with nothing sent or called, when the caller must use
        :meth:`send`. A request and its answer so cost no task and no cancel scope. A
        :class:`WireRequest` writes its own frame and decodes its own answer."""
        stream = self._free_stream()
        loop = asyncio_loop()
        if stream is None or self._gate is not None or loop is None:
            return False
        try:
            self._window.acquire_nowait()
        except anyio.WouldBlock:
            return False
        try:
            correlation_id = next(self._correlation) & 0x7FFFFFFF
            frame, decode = self._encode(request, version, correlation_id)
            if not stream.write_nowait(frame):
                self._window.release()
                return False
        except BaseException:
            self._window.release()
            raise
        self._active += 1
        self.last_used = time.monotonic()
        deadline = loop.time() + timeout_ms / 1000
        pending = _Pending(
            request.RESPONSE_CLASS,
            version,
            on_answer=on_answer,
            correlation_id=correlation_id,
            deadline=deadline,
            timeout_ms=timeout_ms,
            decode=decode,
        )
        self._expect(correlation_id, pending)
        self._count_out(frame_size(frame))
        self._alarm.arm_by(loop, deadline)
        return True

    def _on_alarm(self, loop: asyncio.AbstractEventLoop) -> None:
        """The earliest deadline known when the timer was armed has come: expire a submitted
        request past its own (that closes the connection, so the others fail with the
        close), or arm again for the earliest one still out."""
        now = loop.time()
        earliest = math.inf
        for waiter in self._pending.values():
            if waiter.on_answer is None or waiter.settled:
                continue
            if waiter.deadline <= now:
                self._expire(waiter)
                return
            earliest = min(earliest, waiter.deadline)
        self._alarm.arm_by(loop, earliest)  # inf: none left, stays disarmed

    def _encode(
        self, request: Any, version: int, correlation_id: int
    ) -> tuple[OutFrame, Callable[[memoryview | bytes], Any] | None]:
        """The request's frame, and its own decoder for the answer (a :class:`WireRequest`
        has one; None: the generated decoder)."""
        if isinstance(request, WireRequest):
            return request.frame(version, correlation_id, self._config.client_id), request.decode
        return encode_request(request, version, correlation_id, self._config.client_id), None

    def _free_stream(self) -> FrameStream | None:
        """The stream, if open and no write waits for the socket (a frame written now does
        not overtake one)."""
        if self._close_reason is not None or self._send_lock.locked():
            return None
        return self._stream

    def _expect(self, correlation_id: int, pending: _Pending | None) -> bool:
        """A request's frame is (being) written: expect its answer. True: written."""
        if pending is not None:
            self._pending[correlation_id] = pending
            pending.sent_at = time.monotonic()
        return True

    def _count_out(self, size: int) -> None:
        stats = self.stats
        stats.requests += 1
        stats.bytes_out[self.node_id] = stats.bytes_out.get(self.node_id, 0) + size

    def _answered_in(self, pending: _Pending, api_key: int) -> None:
        latency = time.monotonic() - pending.sent_at
        self.stats.answered(self.node_id, latency)
        if self._on_latency is not None:
            self._on_latency(self.node_id, api_key, latency)

    def _leave(self) -> None:
        """A gated request is over (a re-authentication waits for none to be left)."""
        self._active -= 1
        if not self._active and self._idle is not None:
            self._idle.set()

    def _settle(self, waiter: _Pending) -> None:
        """The waiter's outcome is in: wake its task, or call its ``on_answer`` (submit())."""
        if waiter.done is not None:  # send()'s: its task takes the outcome from here
            waiter.done.set()
            return
        on_answer = waiter.on_answer
        assert on_answer is not None  # submit()'s
        if waiter.settled:
            return
        waiter.settled = True
        self._window.release()
        self._leave()
        error = waiter.error
        if error is None:
            self._answered_in(waiter, waiter.response_cls.API_KEY)
            on_answer(waiter.response, None)
        else:
            on_answer(None, error)

    def _expire(self, waiter: _Pending) -> None:
        """A submitted request's timeout: it fails, and the connection closes, as in send()."""
        self._pending.pop(waiter.correlation_id, None)
        error = KafkaTimeoutError(
            f"{_api_name(waiter.response_cls)} v{waiter.version} request to {self.broker} timed out: "
            f"no answer within {waiter.timeout_ms:.0f} ms; its connection is closed"
        )
        waiter.error = error
        self._settle(waiter)
        self._mark_closed(error)
        if self._stream is not None:
            self._stream.abort()  # ends the read loop; run() then closes the stream

    async def _pass_gate(self, request: Any, timeout_s: float) -> None:
        with anyio.move_on_after(timeout_s) as scope:
            while (gate := self._gate) is not None:
                await gate.wait()
        if scope.cancelled_caught:
            raise KafkaTimeoutError(
                f"{_api_name(request.RESPONSE_CLASS)} request to {self.broker} timed out waiting "
                "for the connection's re-authentication"
            )

    # ------------------------------------------------------------------- reading
    async def _read_loop(self) -> None:
        stream = self._stream
        assert stream is not None
        # An answer is handled where the event loop reads it while this loop waits with
        # nothing in hand (no task wakes for it); big ones, and any after one, come here.
        stream.handle_frames_directly(self._take_frame)
        try:
            while not self._closed.is_set():
                frames = await stream.receive_frames()
                self._count_in(stream)
                for frame in frames:
                    if len(frame) >= THREAD_DECODE_BYTES:
                        await self._dispatch_big(frame)
                    else:
                        self._dispatch(frame)
        except anyio.EndOfStream:
            self.stats.closed_by_broker += 1
            reason = f"the broker closed the connection{self._close_hint(stream, closed=True)}"
            self._mark_closed(KafkaConnectionError(reason))
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._mark_closed(KafkaConnectionError(f"read from {self.broker} failed: {exc!r}"))
        except DecodeError as exc:
            reason = f"malformed frame from {self.broker}: {exc}{self._close_hint(stream, closed=False)}"
            self._mark_closed(KafkaConnectionError(reason))

    def _count_in(self, stream: FrameStream) -> None:
        received = self.stats.bytes_in
        received[self.node_id] = received.get(self.node_id, 0) + stream.received - self._counted
        self._counted = stream.received

    def _take_frame(self, frame: memoryview | bytes) -> bool:
        """A frame offered where it was read (``handle_frames_directly``): handled as the read
        loop does, except the big ones (decoded in a worker thread) and after the close."""
        if len(frame) >= THREAD_DECODE_BYTES or self._close_reason is not None:
            return False
        stream = self._stream
        assert stream is not None
        self._count_in(stream)
        self._dispatch(frame)
        return True

    def _close_hint(self, stream: FrameStream, *, closed: bool) -> str:
        """Why the listener may have ended it this early (network/diagnose.py)."""
        return early_close_hint(
            stream.first_bytes, stream.buffered, self._answered, self._config.security_protocol, closed=closed
        )

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
        self._settle(waiter)

    async def _dispatch_big(self, frame: bytes | memoryview) -> None:
        """The generated decoders in a worker thread; a caller's own decoder (which may be
        cooperative, like Metadata's) here."""
        waiter = self._waiter_for(frame)
        if waiter.decode is None:
            await anyio.to_thread.run_sync(self._decode, waiter, frame, abandon_on_cancel=True)
        else:
            self._decode(waiter, frame)
        self._settle(waiter)

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
