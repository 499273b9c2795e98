"""MetadataRefresher: the background task that keeps the MetadataStore fresh.

It refreshes periodically (``metadata_max_age_ms``) and when someone asks
(``store.request_refresh(reason)``), coalescing requests that arrive while one is in
flight and spacing refreshes at least ``retry_backoff_ms`` apart. While the client waits
for something the metadata does not show yet (``refresh_soon`` gives a reason: a
consumer's subscribed topic without partitions), each refresh asks for the next one, so
it comes ``retry_backoff_ms`` later instead of at the next periodic refresh. It runs
BESIDE request paths: a produce or fetch retry never awaits it (KIP-951). Failures back off
exponentially; when no known broker answers, the pool falls back to the bootstrap
servers (KIP-899), and a Metadata v13 REBOOTSTRAP_REQUIRED does the same (KIP-1102).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection

import anyio
import anyio.abc

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.errors import (
    DecodeError,
    KafkaError,
    KafkaTimeoutError,
    RebootstrapRequiredError,
    error_for_code,
)
from aiokafka_lead.metadata.decode import decode_metadata, topics_from_response
from aiokafka_lead.metadata.model import (
    BrokerNode,
    MetadataChange,
    MetadataSnapshot,
    TopicMetadata,
)
from aiokafka_lead.metadata.store import MetadataStore
from aiokafka_lead.network.pool import BrokerPool
from aiokafka_lead.protocol.messages import MetadataRequest, MetadataResponse

log = logging.getLogger(__name__)

# Metadata below v9 carries no reliable leader epochs (guide section 2).
RELIABLE_EPOCHS_VERSION = 9

TopicsFn = Callable[[], Collection[str] | None]
#: why the client wants another refresh soon (None: the periodic one will do)
RefreshSoonFn = Callable[[], str | None]


def snapshot_from_response(
    response: MetadataResponse,
    version: int,
    requested: Collection[str] | None,
    source: str = "Metadata",
    topics: Collection[TopicMetadata] | None = None,
) -> MetadataSnapshot:
    """Translate a MetadataResponse into the store's terms (the store checks the values);
    topics not ``requested`` are left out (the store would ignore them). ``topics``, when
    given, are the answer's topics already in those terms (:func:`decode_metadata`)."""
    wanted = None if requested is None else frozenset(requested)
    return MetadataSnapshot(
        brokers=tuple(BrokerNode(b.node_id, b.host, b.port, b.rack) for b in response.brokers),
        topics=tuple(topics_from_response(response, wanted) if topics is None else topics),
        controller_id=response.controller_id,
        cluster_id=response.cluster_id,
        epochs_reliable=version >= RELIABLE_EPOCHS_VERSION,
        requested_topics=wanted,
        source=source,
    )


class MetadataRefresher:
    """Periodic and expedited Metadata requests for one client."""

    def __init__(
        self,
        store: MetadataStore,
        pool: BrokerPool,
        *,
        topics: TopicsFn = lambda: None,
        backoff: ExponentialBackoff,
        allow_auto_topic_creation: bool = False,
        refresh_soon: RefreshSoonFn = lambda: None,
    ) -> None:
        self._store = store
        self._pool = pool
        self._topics = topics
        self._backoff = backoff
        self._auto_create = allow_auto_topic_creation
        self._refresh_soon = refresh_soon
        self._last_attempt = 0.0
        self.refreshes = 0
        self.failures = 0

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Refresh forever: when asked, or when the cached metadata is older than max age."""
        task_status.started()
        failures = 0
        config = self._pool.config
        while True:
            last = self._store.last_refresh
            max_age_s = config.metadata_max_age_ms / 1000
            stale_in = 0.0 if last is None else max(0.0, last + max_age_s - time.monotonic())
            with anyio.move_on_after(stale_in):
                await self._store.wait_refresh_requested()
            spacing = self._last_attempt + config.retry_backoff_ms / 1000 - time.monotonic()
            if spacing > 0:
                await anyio.sleep(spacing)  # coalesce a burst of requests into one refresh
            reasons = self._store.take_refresh_reasons() or ["periodic"]
            try:
                await self.refresh("; ".join(reasons))
                failures = 0
                again = self._refresh_soon()
                if again is not None:
                    self._store.request_refresh(again)  # spaced by retry_backoff_ms above
            except KafkaError as exc:
                if not exc.retriable and not isinstance(exc, KafkaTimeoutError):
                    raise
                self.failures += 1
                delay = self._backoff.delay_s(failures)
                failures += 1
                log.warning("metadata refresh failed (%s); retrying in %.0f ms", exc, delay * 1000)
                await anyio.sleep(delay)
                self._store.request_refresh("retry after failed refresh")

    async def refresh(self, reason: str) -> MetadataChange:
        """One Metadata round trip to any reachable broker, merged into the store."""
        self._last_attempt = time.monotonic()
        log.debug("metadata refresh: %s", reason)
        conn = await self._pool.any_connection()
        version = conn.version_for(MetadataRequest.API_KEY)
        requested = self._topics()
        topics = (
            None
            if requested is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(requested)]
        )
        request = MetadataRequest(topics=topics, allow_auto_topic_creation=self._auto_create)
        # only our topics are decoded (metadata/decode.py): memory follows what we use
        frame: bytes = await conn.send(request, version=version, decode=bytes)
        try:
            decoded = await decode_metadata(frame, version, requested)
        except DecodeError as exc:
            raise DecodeError(f"Metadata v{version} response from {conn.broker}: {exc}") from None
        del frame
        response = decoded.response
        if version >= 13 and response.error_code:
            if response.error_code == RebootstrapRequiredError.errno:
                self._pool.forget_nodes()
            raise error_for_code(response.error_code, f"Metadata from {conn!r}")
        self.refreshes += 1
        source = f"Metadata v{version} from {conn.broker}"
        snapshot = snapshot_from_response(response, version, requested, source, decoded.topics)
        return await self._store.apply_metadata_sliced(snapshot, reason=reason)
