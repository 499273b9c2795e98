"""AIOKafkaShareConsumer: a member of a share group (KIP-932), asyncio-native.

Many members read the same partitions; the broker hands each record to one member under an
acquisition lock and the member settles it (ACCEPT, RELEASE, REJECT; RENEW to keep it
longer). Background tasks in the client's task group: the metadata refresher, the
heartbeat loop (``member.py``) and the fetcher (``fetcher.py``); the public methods only
take records from the fetcher's buffer and record acknowledgements (``acks.py``).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Self

import anyio
import anyio.abc

from aiokafka_lead.config.arguments import check_topic
from aiokafka_lead.core.client import ClientCore, guarded
from aiokafka_lead.core.telemetry_api import TelemetryAPI
from aiokafka_lead.errors import ConsumerStoppedError, IllegalStateError, KafkaError, KafkaTimeoutError
from aiokafka_lead.metadata import MetadataChange
from aiokafka_lead.requests.groups import GroupRequests
from aiokafka_lead.runtime import ClientClosedError, ExitOnLeave
from aiokafka_lead.share.acknowledge import ShareParts
from aiokafka_lead.share.acks import AckLedger
from aiokafka_lead.share.config import ShareConsumerConfig
from aiokafka_lead.share.fetcher import ShareFetcher
from aiokafka_lead.share.keywords import ShareConsumerKeywords
from aiokafka_lead.share.member import ShareGroupMember
from aiokafka_lead.share.metrics import ShareMetricSource
from aiokafka_lead.share.records import AcknowledgeType, ShareConsumerRecord
from aiokafka_lead.share.session import NodeSessions
from aiokafka_lead.structs import KT, VT, TopicPartition

log = logging.getLogger(__name__)


class AIOKafkaShareConsumer(ShareConsumerKeywords[KT, VT], TelemetryAPI, ExitOnLeave):
    """A share-group consumer (brokers with the share APIs and ``share.version`` finalized).

    Its keywords are :class:`ShareConsumerKeywords`' (generated from ``ShareConsumerConfig``).
    """

    def _configure(self, topics: tuple[str, ...], config: ShareConsumerConfig) -> None:
        """Build the share consumer's parts from its configuration."""
        self._state = "stopped"  # first: a constructor that fails leaves nothing to close
        self._config = config
        self._errors: list[KafkaError] = []
        #: set when an error is reported (start() waits on it with the join)
        self._attention = anyio.Event()
        self._core = ClientCore(
            "AIOKafkaShareConsumer",
            config,
            topics=lambda: sorted(self._member.topics),
            client_type="consumer-share",
        )
        self._core.extra_setup = self._setup
        self._ledger = AckLedger(explicit=config.explicit)
        self._member = ShareGroupMember(
            self._core,
            GroupRequests(self._core),
            config,
            on_assignment=self._wake_fetcher,
            report_error=self._report_error,
        )
        self._fetcher = ShareFetcher(
            ShareParts(
                self._core,
                self._member,
                self._ledger,
                config,
                NodeSessions(),
                on_ack_result=None if config.acknowledgement_commit_callback is None else self._ack_result,
            )
        )
        self._core.metrics.add(ShareMetricSource(self._fetcher))
        group_id = config.group_id
        self._core.telemetry_resource = lambda: [("group_id", group_id)] if group_id is not None else []
        if topics:
            self.subscribe(topics)
        self._state = "new"

    # -------------------------------------------------------------- lifecycle
    async def _setup(self, tg: anyio.abc.TaskGroup) -> None:
        self._core.store.add_listener(self._on_metadata)
        await tg.start(self._fetcher.run)
        await tg.start(self._member.run)

    def _wake_fetcher(self) -> None:
        self._fetcher.wake()

    def _on_metadata(self, change: MetadataChange) -> None:
        self._member.on_metadata_change()
        self._fetcher.wake()

    async def start(self) -> None:
        """Connect, fetch metadata and join the group when subscribed: returns once the
        coordinator answered the first heartbeat (an error of the join is raised here). The
        broker assigns partitions shortly after (``assignment()``); records flow from then."""
        if self._state != "new":
            raise IllegalStateError(f"AIOKafkaShareConsumer cannot start: it is {self._state}")
        self._state = "running"
        try:
            await self._core.start()
        except BaseException:
            self._state = "stopped"
            raise
        if self._member.topics:
            try:
                with self._core.host.guard():
                    await self._until_joined()
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self.close()
                raise

    async def _until_joined(self) -> None:
        with anyio.move_on_after(self._config.request_timeout_ms / 1000):
            while not self._member.joined.is_set():
                if self._errors:
                    raise self._errors.pop(0)
                self._attention = anyio.Event()
                async with anyio.create_task_group() as tg:

                    async def wake_on(event: anyio.Event) -> None:
                        await event.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(wake_on, self._member.joined)
                    tg.start_soon(wake_on, self._attention)
            return
        raise KafkaTimeoutError(
            f"share group {self._config.group}: no answer to the first heartbeat within "
            f"request_timeout_ms={self._config.request_timeout_ms}"
        )

    async def close(self) -> None:
        """Release what was delivered but not acknowledged and everything still buffered,
        send the pending acknowledgements and close the share sessions (ShareAcknowledge,
        epoch -1), leave the group (epoch -1), stop every background task."""
        if self._state in ("stopping", "stopped"):
            return
        running = self._state == "running" and self._core.host.running
        self._state = "stopping"
        self._fetcher.closing = True
        self._fetcher.buffer.data.set()
        try:
            if running:
                with anyio.move_on_after(self._config.request_timeout_ms / 1000, shield=True):
                    await self._close_sessions()
                    await self._member.leave()
        finally:
            self._state = "stopped"
            self._core.store.remove_listener(self._on_metadata)
            await self._core.close()

    stop = close

    async def _close_sessions(self) -> None:
        self._ledger.release_all()
        nodes = set(self._fetcher.nodes.sessions) | self._ledger.pending_nodes()
        for node_id in sorted(nodes):
            async with self._fetcher.nodes.lock(node_id):
                self._fetcher.release_buffered()  # after the fetch in flight, if any, brought its records
                acks = self._ledger.take(node_id)
                if self._fetcher.nodes.session(node_id).is_open:
                    await self._fetcher.acks.acknowledge(node_id, acks, close=True)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def _exit(self, exc: BaseException | None) -> None:
        await self.close()

    def __del__(self) -> None:
        if getattr(self, "_state", "stopped") not in ("stopped", "new"):
            warnings.warn(
                f"Unclosed AIOKafkaShareConsumer {self!r}", ResourceWarning, source=self, stacklevel=1
            )

    # ----------------------------------------------------------- subscription
    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to these topic names (replacing the previous subscription)."""
        if isinstance(topics, str):
            raise TypeError("subscribe() takes a collection of topic names, not one string")
        names = frozenset(topics)
        if not names:
            raise ValueError("subscribe() needs at least one topic; use unsubscribe() to leave")
        for topic in names:
            check_topic(topic)
        self._member.subscribe(names)
        if self._core.host.running:
            self._core.store.request_refresh("share consumer subscription changed")

    def subscription(self) -> frozenset[str]:
        return self._member.topics

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the broker assigned this member (shared with other members)."""
        return self._member.assignment

    @property
    def member_id(self) -> str:
        return self._member.member_id

    @property
    def member_epoch(self) -> int:
        return self._member.member_epoch

    # ----------------------------------------------------------------- polling
    def _check_running(self) -> None:
        if self._state == "new":
            raise IllegalStateError("AIOKafkaShareConsumer is not started: call start() first")
        if self._state != "running":
            raise ClientClosedError("AIOKafkaShareConsumer is closed")
        self._core.host.require_running()

    def _report_error(self, err: KafkaError) -> None:
        self._errors.append(err)
        self._fetcher.buffer.data.set()
        self._attention.set()

    def _ack_result(self, offsets: Mapping[TopicPartition, set[int]], error: KafkaError | None) -> None:
        callback = self._config.acknowledgement_commit_callback
        if callback is not None:
            try:
                callback(offsets, error)
            except Exception:
                log.exception("acknowledgement_commit_callback failed")

    @guarded
    async def getmany(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ShareConsumerRecord[KT, VT]]]:
        """Records acquired for this member, by partition: at most ``max_records`` (default
        ``max_poll_records``), waiting up to ``timeout_ms`` for the first.

        First settles the previous poll's records: implicit mode accepts the unacknowledged
        ones; explicit mode raises ``IllegalStateError`` if any is unacknowledged."""
        chunks = await self._poll(timeout_ms, max_records or self._config.max_poll_records)
        out: dict[TopicPartition, list[ShareConsumerRecord[KT, VT]]] = {}
        for chunk in chunks:  # each the records of one partition (the ledger keeps the chunk)
            out.setdefault(TopicPartition(chunk[0].topic, chunk[0].partition), []).extend(chunk)
        return out

    @guarded
    async def getone(self) -> ShareConsumerRecord[KT, VT]:
        """The next record (waits for one); settles the previous one as ``getmany()`` does.
        Raises ``ConsumerStoppedError`` if the consumer is closed meanwhile."""
        while True:
            chunks = await self._poll(None, 1)
            if chunks:
                return chunks[0][0]
            if self._state != "running":
                raise ConsumerStoppedError("AIOKafkaShareConsumer was closed while getone() waited")

    async def _poll(
        self, timeout_ms: int | None, max_records: int
    ) -> list[list[ShareConsumerRecord[KT, VT]]]:
        self._check_running()
        if self._errors:
            raise self._errors.pop(0)
        self._ledger.before_poll()
        self._fetcher.wake()  # the implicit acceptances may go out with the next fetch
        buffer = self._fetcher.buffer
        with anyio.move_on_after(None if timeout_ms is None else timeout_ms / 1000):
            while not len(buffer):
                if self._errors:
                    raise self._errors.pop(0)
                if self._state != "running":
                    return []
                await buffer.data.wait()
                if self._state != "running":
                    return []
        chunks: list[list[ShareConsumerRecord[KT, VT]]] = buffer.take(max_records)
        self._fetcher.wake()
        self._ledger.delivered(chunks)
        return chunks

    def __aiter__(self) -> AsyncIterator[ShareConsumerRecord[KT, VT]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ShareConsumerRecord[KT, VT]]:
        while self._state == "running":
            try:
                yield await self.getone()
            except (ClientClosedError, ConsumerStoppedError):
                return

    # ---------------------------------------------------------- acknowledging
    def acknowledge(
        self, record: ShareConsumerRecord[KT, VT], type: AcknowledgeType = AcknowledgeType.ACCEPT
    ) -> None:
        """Settle one delivered record. The acknowledgement goes with the next fetch from its
        partition's leader, or at once with ``commit()``. RENEW (explicit mode only) restarts
        the record's lock; the record still needs ACCEPT, RELEASE or REJECT later."""
        self._check_running()
        kind = AcknowledgeType(type)
        if kind is AcknowledgeType.RENEW and not self._config.explicit:
            raise IllegalStateError("RENEW needs acknowledgement_mode='explicit'")
        self._ledger.acknowledge(record, kind)

    @guarded
    async def commit(self) -> dict[TopicPartition, KafkaError | None]:
        """Send every pending acknowledgement now (ShareAcknowledge) and wait for the
        outcome of every acknowledgement made before this call (those already on their way
        with a fetch too): {partition: None, or the error its acknowledgements got}. In
        implicit mode the records delivered by the last poll are accepted first."""
        self._check_running()
        if not self._config.explicit:
            self._ledger.before_poll()
        # what this call covers is fixed now: acknowledgements riding on a fetch, and the
        # pending ones (taken at once, so no fetch starting meanwhile carries them instead)
        riding = [r for r in self._fetcher.acks.riding.values() if r.partitions]
        taken = {n: self._ledger.take(n) for n in sorted(self._ledger.pending_nodes())}
        results: dict[TopicPartition, KafkaError | None] = {}
        for round_ in riding:
            await round_.done.wait()
            for tp in round_.partitions:
                results[tp] = results.get(tp) or round_.outcomes.get(tp)
        for node_id, acks in taken.items():
            async with self._fetcher.nodes.lock(node_id):
                for tp, err in (await self._fetcher.acks.acknowledge(node_id, acks)).items():
                    results[tp] = results.get(tp) or err
        return results


__all__ = ["AIOKafkaShareConsumer"]
