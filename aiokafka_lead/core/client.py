"""ClientCore: what the producer, consumer and admin client share.

One MetadataStore, one BrokerPool and one MetadataRefresher per client, all running in
the client's own task group (see :mod:`aiokafka_lead.runtime`). Start-up fetches the first
metadata so a wrong address or wrong credentials fail ``start()`` with a clear error.

Failure containment is shared here too: each client registers what to resolve when a
background task fails (:meth:`ClientCore.on_failure`), marks its public coroutines with
:func:`guarded`, and the core closes the connections (see :mod:`aiokafka_lead.runtime`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Collection, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import anyio
import anyio.abc

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.core.refresher import MetadataRefresher, RefreshSoonFn
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError, UnsupportedVersionError
from aiokafka_lead.metadata import MetadataStore
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.network.metrics import ConnectionMetrics, ConnectionStats
from aiokafka_lead.network.pool import BrokerPool
from aiokafka_lead.runtime import ClientFailedError, TaskGroupHost
from aiokafka_lead.telemetry.otlp import Attribute
from aiokafka_lead.telemetry.push import TERMINATING_PUSH_S, TelemetryPusher
from aiokafka_lead.telemetry.registry import MetricsRegistry

log = logging.getLogger(__name__)

#: a topic's Metadata answer while it may still appear (auto-creation in progress)
TOPIC_MAY_APPEAR = frozenset({
    ErrorCode.NONE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.LEADER_NOT_AVAILABLE,
})
#: a topic's Metadata answer while it is not there yet
TOPIC_NOT_YET = TOPIC_MAY_APPEAR - {ErrorCode.NONE}
P = ParamSpec("P")
#: close() tasks of clients dropped without stop(), kept until they end (a loop holds its
#: tasks only weakly)
_ABANDONED: set[asyncio.Task[None]] = set()
R = TypeVar("R")


class HasCore(Protocol):
    _core: ClientCore


C = TypeVar("C", bound=HasCore)


def guarded(
    method: Callable[Concatenate[C, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[C, P], Coroutine[Any, Any, R]]:
    """A public coroutine of a client: if a background task fails while it waits, it raises
    ClientFailedError at once (and at entry once the client has failed)."""

    async def call(client: C, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with client._core.host.guard():
            return await method(client, *args, **kwargs)

    functools.update_wrapper(call, method)  # name and docstring (its return type would confuse mypy)
    return call


class _AnyBroker:
    """The KIP-714 loop's way to a broker: any live connection; None where the broker does
    not speak the request's API (no telemetry receiver)."""

    def __init__(self, pool: BrokerPool) -> None:
        self._pool = pool

    async def send(self, request: Any) -> Any | None:
        conn = await self._pool.any_connection()
        try:
            version = conn.version_for(request.API_KEY)
        except UnsupportedVersionError:
            return None
        return await conn.send(request, version=version)


class ClientCore:
    """Store + pool + refresher with one lifecycle."""

    def __init__(
        self,
        name: str,
        config: ConnectionConfig,
        *,
        topics: Callable[[], Collection[str] | None] = lambda: None,
        allow_auto_topic_creation: bool = False,
        refresh_soon: RefreshSoonFn = lambda: None,
        client_type: str = "admin-client",
    ) -> None:
        """``topics``: what Metadata requests ask for (None: every topic); ``refresh_soon``:
        why another refresh is wanted at ``retry_backoff_ms`` (None: at ``metadata_max_age_ms``);
        ``client_type``: the prefix of the Java metric groups (producer, consumer, admin-client)."""
        self.name = name
        #: the client's whole configuration (every part reads its settings here)
        self.config = config
        #: retries of every part of the client back off alike (retry_backoff_ms, KIP-580)
        self.backoff = ExponentialBackoff(config.retry_backoff_ms, config.retry_backoff_cap_ms)
        self.store = MetadataStore()
        self.host = TaskGroupHost(name, on_failure=self._failed)
        self._failure_callbacks: list[Callable[[ClientFailedError], None]] = []
        #: the topics whose metadata the client needs (None: every topic); read at start
        self.topics = topics
        self._auto_create = allow_auto_topic_creation
        self._refresh_soon = refresh_soon
        self._pool: BrokerPool | None = None
        #: every connection's counters (SASL authentications and re-authentications, closes)
        self.connection_stats = ConnectionStats()
        #: the Java-named metrics: the connections' here, each client adds its own parts
        self.metrics = MetricsRegistry(config.client_id or name, client_type)
        self.metrics.add(ConnectionMetrics(self.connection_stats))
        #: the KIP-714 loop while the client runs (``enable_metrics_push``), and the resource
        #: attributes its pushes carry (each client sets its own: group id, transactional id)
        self.telemetry: TelemetryPusher | None = None
        self.telemetry_resource: Callable[[], list[Attribute]] = list
        self._refresher: MetadataRefresher | None = None
        # the producer/consumer's own start-up, run after metadata is up (e.g. start the sender)
        self.extra_setup: Callable[[anyio.abc.TaskGroup], Awaitable[None]] | None = None

    @property
    def pool(self) -> BrokerPool:
        if self._pool is None or self.host.task_group is None:
            self.host.require_running()
            raise KafkaConnectionError(f"{self.name} is not started")
        return self._pool

    def connection_metrics(self) -> dict[str, int]:
        """The connections' part of a client's ``metrics()``: ``sasl_reauthentications``
        (KIP-368) and ``connections_closed_by_broker``."""
        conns = self.connection_stats
        return {
            "sasl_reauthentications": conns.reauthentications,
            "connections_closed_by_broker": conns.closed_by_broker,
        }

    def on_failure(self, callback: Callable[[ClientFailedError], None]) -> None:
        """Run ``callback`` (synchronously) if a background task fails: resolve what is pending."""
        self._failure_callbacks.append(callback)

    async def _failed(self, error: ClientFailedError) -> None:
        for callback in self._failure_callbacks:
            try:
                callback(error)
            except Exception:  # one client part failing to clean up must not stop the others
                log.exception("%s: failure callback %r raised", self.name, callback)
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    @property
    def refresher(self) -> MetadataRefresher:
        if self._refresher is None:
            raise KafkaConnectionError(f"{self.name} is not started")
        return self._refresher

    @property
    def task_group(self) -> anyio.abc.TaskGroup:
        return self.host.require_running()

    async def _setup(self, tg: anyio.abc.TaskGroup) -> None:
        self._pool = BrokerPool(self.store, self.config, tg, self.connection_stats)
        self._refresher = MetadataRefresher(
            self.store,
            self._pool,
            topics=self.topics,
            backoff=self.backoff,
            allow_auto_topic_creation=self._auto_create,
            refresh_soon=self._refresh_soon,
        )
        try:
            with anyio.fail_after(self.config.request_timeout_ms / 1000):
                await self._refresher.refresh("bootstrap")
        except TimeoutError:
            raise KafkaTimeoutError(
                f"{self.name}: no metadata from {self.config.bootstrap_servers} "
                f"within {self.config.request_timeout_ms} ms"
            ) from None
        except KafkaConnectionError as exc:
            raise type(exc)(
                f"{self.name}: unable to bootstrap from {self.config.bootstrap_servers}: {exc}"
            ) from exc
        await tg.start(self._refresher.run)
        await tg.start(self._pool.reap_idle)
        if self.config.enable_metrics_push:
            self.telemetry = TelemetryPusher(self.metrics, _AnyBroker(self._pool), self.telemetry_resource)
            await tg.start(self.telemetry.run)
        # used once: the core keeps no reference to the client that owns it (the task tree
        # must not hold the client, so that one dropped unclosed is collected and warns)
        extra_setup, self.extra_setup = self.extra_setup, None
        if extra_setup is not None:
            await extra_setup(tg)

    async def start(self) -> None:
        try:
            await self.host.start(self._setup)
        except BaseException:
            await self.close()  # a failed start leaves no connection behind
            raise

    async def enter(self) -> None:
        try:
            await self.host.enter(self._setup)
        except BaseException:
            await self.close()
            raise

    def close_abandoned(self) -> None:
        """The client was dropped without stop() (called from its ``__del__``): close the
        core in a task of its loop, as stop() would (records still queued are not sent)."""
        loop = self.host.loop()
        if loop is None or loop.is_closed():
            return

        def begin() -> None:
            task = loop.create_task(self.close(), name=f"{self.name} (dropped unclosed)")
            _ABANDONED.add(task)
            task.add_done_callback(_ABANDONED.discard)

        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (another thread)
            loop.call_soon_threadsafe(begin)

    async def close(self) -> None:
        """Cancel the background tasks first (so none of them sees its connection vanish), then
        close the connections; the last KIP-714 push (``terminating``) goes before them."""
        telemetry, self.telemetry = self.telemetry, None
        if telemetry is not None and self.host.running:
            await telemetry.terminate(min(self.config.request_timeout_ms / 1000, TERMINATING_PUSH_S))
        await self.host.stop()
        pool, self._pool = self._pool, None
        if pool is not None:
            with anyio.CancelScope(shield=True):
                await pool.close()

    # ------------------------------------------------------------ conveniences
    async def send(self, node_id: int, request: Any, **kwargs: Any) -> Any:
        return await self.pool.send(node_id, request, **kwargs)

    async def any_connection(self) -> Connection:
        return await self.pool.any_connection()

    async def refresh_metadata(self, reason: str) -> None:
        """A synchronous refresh for callers that truly need fresh metadata (admin, start-up).

        Never used on a produce or fetch retry path (KIP-951).
        """
        await self.refresher.refresh(reason)

    async def wait_for_topics(self, topics: Collection[str], timeout_ms: float) -> None:
        """Refresh until every topic is known (or its error is definitive), every
        ``retry_backoff_ms``; the first refresh waits that long too when the last answer
        said of every missing topic that it is not there yet."""
        backoff_s = self.config.retry_backoff_ms / 1000
        try:
            with anyio.fail_after(timeout_ms / 1000):
                missing = [t for t in topics if self.store.partitions_for_topic(t) is None]
                if missing and all(self.store.topic_error(t) in TOPIC_NOT_YET for t in missing):
                    await anyio.sleep(backoff_s)  # just asked for: no second request at once
                while True:
                    missing = [t for t in topics if self.store.partitions_for_topic(t) is None]
                    if not missing:
                        return
                    await self.refresher.refresh(f"waiting for topics {missing}")
                    if any(self.store.topic_error(t) not in TOPIC_MAY_APPEAR for t in missing):
                        return
                    await anyio.sleep(backoff_s)
        except TimeoutError:
            missing = sorted(t for t in topics if self.store.partitions_for_topic(t) is None)
            unknown = [
                t for t in missing if self.store.topic_error(t) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            ]
            why = (
                f": the brokers answer UNKNOWN_TOPIC_OR_PARTITION for {', '.join(map(repr, unknown))} "
                "(it does not exist, and auto-creation is off or not allowed for this client)"
                if unknown
                else ""
            )
            problems = [p for t in missing if (p := self.store.topic_problem(t)) is not None]
            if problems:
                why += f": the brokers' answers were refused: {'; '.join(problems)}"
            names = ", ".join(map(repr, missing))
            raise KafkaTimeoutError(
                f"topic(s) {names} not present in metadata after {timeout_ms:.0f} ms{why}"
            ) from None


__all__ = ["ClientCore", "KafkaError"]
