"""AIOKafkaConsumer: aiokafka's public consumer API over the fetcher and the group coordinator.

Everything that runs in the background (metadata refresher, fetcher, group coordinator,
heartbeats, auto-commit) lives in the client's task group, started with ``tg.start`` so
``start()`` returns only once they run; ``stop()`` commits, leaves the group and cancels
them all. The public methods only read and mutate the synchronous SubscriptionState and
wait on events; no lock is held across an await. They come in groups: the assignment
(``assignment_api.py``), positions and offset look-ups (``positions_api.py``), and here
records, commits and metrics, over the parts ``consumer_base.py`` names.
"""

from __future__ import annotations

import functools
import logging
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Self, TypeVar

import anyio
import anyio.abc

from aiokafka_lead.config.validation import commit_offsets_argument
from aiokafka_lead.consumer.assignment_api import AssignmentAPI
from aiokafka_lead.consumer.assignors import PartitionAssignor
from aiokafka_lead.consumer.buffer import Chunk
from aiokafka_lead.consumer.compat import ConsumerCompat
from aiokafka_lead.consumer.config import ConsumerConfig
from aiokafka_lead.consumer.consumer_base import only_topic_partitions
from aiokafka_lead.consumer.consumer_protocol import ConsumerGroupMember
from aiokafka_lead.consumer.coordinator import ConsumerRebalanceListener, topics_needed
from aiokafka_lead.consumer.delivered import DeliveredMembership
from aiokafka_lead.consumer.errors import ConsumerStoppedError, IllegalOperation, IllegalStateError
from aiokafka_lead.consumer.fetcher import Fetcher
from aiokafka_lead.consumer.group_common import GroupMember
from aiokafka_lead.consumer.group_protocols import create_group_member
from aiokafka_lead.consumer.keywords import ConsumerKeywords
from aiokafka_lead.consumer.metrics import ConsumerMetricSource
from aiokafka_lead.consumer.offsets import PositionManager
from aiokafka_lead.consumer.positions_api import PositionsAPI
from aiokafka_lead.consumer.subscription import ResetStrategy, SubscriptionState, SubscriptionType
from aiokafka_lead.core.client import TOPIC_MAY_APPEAR, ClientCore, guarded
from aiokafka_lead.core.telemetry_api import TelemetryAPI
from aiokafka_lead.errors import (
    KafkaError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from aiokafka_lead.metadata import MetadataChange
from aiokafka_lead.protocol.messages import MetadataRequest
from aiokafka_lead.records import native
from aiokafka_lead.requests.lookup import Lookups
from aiokafka_lead.runtime import ClientClosedError, ExitOnLeave, weakly
from aiokafka_lead.structs import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)

log = logging.getLogger(__name__)

KT = TypeVar("KT")
VT = TypeVar("VT")


class AIOKafkaConsumer(
    ConsumerKeywords[KT, VT], AssignmentAPI, PositionsAPI, ConsumerCompat, TelemetryAPI, ExitOnLeave
):
    """Asyncio Kafka consumer with aiokafka's constructor keywords and methods.

    Positions are KIP-320 aware (every fetch carries the leader epoch, truncation after a
    leader change is detected), leader moves are followed through KIP-951 hints without
    waiting for metadata, and offset look-ups follow KIP-207.
    """

    def _configure(self, topics: tuple[str, ...], config: ConsumerConfig) -> None:
        """Build the consumer's parts from its configuration (the constructor's keywords are
        :class:`ConsumerKeywords`')."""
        self._state = "stopped"  # first: a constructor that fails leaves nothing to close
        self._config = config
        self._subs = SubscriptionState(ResetStrategy(config.auto_offset_reset))
        self._errors: list[KafkaError] = []
        self._listening = False
        self._last_poll = time.monotonic()
        self._in_poll = 0
        self._coordinator: GroupMember | None = None
        self._core = ClientCore(
            "AIOKafkaConsumer",
            config,
            # aiokafka's and Java's default: asking for a missing topic's metadata creates it
            # where the brokers allow it (auto.create.topics.enable)
            allow_auto_topic_creation=config.allow_auto_create_topics,
            refresh_soon=weakly(self._topics_awaited, None),
            client_type="consumer",
        )
        self._lookup = Lookups(self._core)
        # the background parts get callbacks that do not hold the consumer (runtime.weakly):
        # one dropped without stop() is collected, warns and is closed
        report_error = weakly(self._report_error, None)
        self._metadata_listener = weakly(self._on_metadata, None)
        self._positions = PositionManager(
            self._core,
            self._subs,
            self._lookup,
            config,
            report_error=report_error,
            member=weakly(self._offset_fetch_member, None),
        )
        self._fetcher = Fetcher(self._core, self._subs, self._positions, config, report_error=report_error)
        # KIP-714 resource attributes, named as librdkafka's
        group = [("group_id", config.group_id)] if config.group_id is not None else []
        if config.group_instance_id is not None:
            group.append(("group_instance_id", config.group_instance_id))
        self._core.telemetry_resource = lambda: list(group)
        if config.group_id is not None:
            self._coordinator = create_group_member(
                config,
                self._core,
                self._subs,
                self._lookup,
                consumed_offsets=weakly(self._consumed_offsets, {}),
                report_error=report_error,
                last_poll=weakly(self._last_poll_time, 0.0),
            )
        self._delivered: DeliveredMembership | None = None
        if self._coordinator is not None:
            self._delivered = DeliveredMembership(
                self._subs, functools.partial(_membership_now, self._coordinator)
            )
        group_stats = self._coordinator.stats if self._coordinator is not None else None
        self._core.metrics.add(
            ConsumerMetricSource(
                self._fetcher.stats,
                self._subs,
                group_stats,
                read_committed=config.isolation_level == "read_committed",
            )
        )
        self._core.topics = functools.partial(topics_needed, self._subs, self._coordinator)
        if topics:
            self._subs.subscribe(topics)
        # a poll waits for records or an error: partition errors ("none") wake it too
        self._subs.listeners.append(self._fetcher.notify_data)
        self._state = "new"  # from here on, dropping it unclosed warns (as aiokafka's)

    # ----------------------------------------------------------------- lifecycle
    async def _setup(self, tg: anyio.abc.TaskGroup) -> None:
        await self._wait_subscribed_topics()
        self._core.store.add_listener(self._metadata_listener)
        self._listening = True
        await tg.start(self._fetcher.run)
        if self._coordinator is not None:
            await tg.start(self._coordinator.run)
        self._on_metadata(MetadataChange("start"))

    async def start(self) -> None:
        """Connect, fetch metadata, start the background tasks and, as aiokafka's start(),
        join the group.

        Subscribed topics (not a pattern) are waited for first: their metadata is asked
        for every ``retry_backoff_ms`` (which creates a missing topic where the brokers
        allow it) until they have partitions, and UnknownTopicOrPartitionError is raised
        if one has none after ``request_timeout_ms`` (TopicAuthorizationFailedError at
        once for a topic this client may not describe). With a subscription it returns
        once the partitions are assigned (the group's first assignment, or every
        partition of the topics without a group_id) and each has its starting position,
        so records produced after start() returns are consumed under "latest"; errors of
        the join (e.g. InvalidSessionTimeoutError) are raised here."""
        await self._begin(self._core.start)

    async def _begin(self, start: Callable[[], Awaitable[None]]) -> None:
        self._core.extra_setup = self._setup  # used once by the start (ClientCore keeps no client)
        self._state = "running"
        try:
            await start()
        except BaseException:
            self._state = "stopped"  # the core closed itself: nothing is left running
            raise
        try:
            await self._until_first_assignment()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._shutdown(leave=False)
            raise

    async def _wait_subscribed_topics(self) -> None:
        """aiokafka's start(): every subscribed topic has partitions before anything runs."""
        if self._subs.kind != SubscriptionType.AUTO_TOPICS:
            return
        store = self._core.store
        timeout_ms = self._config.request_timeout_ms
        try:
            await self._core.wait_for_topics(self._subs.topics, timeout_ms)
        except KafkaTimeoutError as exc:
            raise UnknownTopicOrPartitionError(str(exc)) from None
        for topic in sorted(self._subs.topics):
            code = store.topic_error(topic)
            if store.partitions_for_topic(topic) is None and code not in TOPIC_MAY_APPEAR:
                raise error_for_code(
                    code, f"subscribed topic {topic!r}, in the answer of {store.topic_error_source(topic)}"
                )

    def _topics_awaited(self) -> str | None:
        """Subscribed topics without partitions yet: their metadata is asked for at
        ``retry_backoff_ms`` until they appear (not at the next periodic refresh)."""
        if self._subs.kind != SubscriptionType.AUTO_TOPICS:
            return None
        store = self._core.store
        missing = sorted(t for t in self._subs.topics if not store.partitions_for_topic(t))
        return f"subscribed topics without partitions: {missing}" if missing else None

    async def _until_first_assignment(self) -> None:
        member = self._coordinator
        auto = (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)
        if self._subs.kind not in auto:
            return
        if member is None:
            # every partition of the topics is assigned already: their starting positions
            # (a partition that cannot get one in time goes on in the background; an
            # error waits for the first poll, as aiokafka's start() returns without one)
            def settled() -> bool:
                return bool(self._errors) or all(self._position_settled(tp) for tp in self._subs.assigned())

            with anyio.move_on_after(self._config.request_timeout_ms / 1000):
                await self._subs.wait_until(settled)
            return

        def ready() -> bool:
            if self._errors:  # a partition's own error ("none") waits for the first poll
                raise self._errors.pop(0)
            return member.assignment_done and all(self._position_settled(tp) for tp in self._subs.assigned())

        await self._subs.wait_until(ready)

    async def stop(self) -> None:
        """Commit (if auto-commit), leave the group, and stop every background task.

        A getmany() waiting at that moment returns {} and a waiting getone() (or
        ``async for``) ends, as in aiokafka; the rebalance listener is not called.
        """
        await self._shutdown(leave=True)

    close = stop

    async def _shutdown(self, *, leave: bool) -> None:
        if self._state in ("stopping", "stopped"):
            return
        self._state = "stopping"
        self._fetcher.notify_data()
        try:
            if leave and self._coordinator is not None and self._core.host.running:
                with anyio.move_on_after(self._config.request_timeout_ms / 1000, shield=True) as scope:
                    await self._coordinator.close()
                if scope.cancelled_caught:
                    log.warning(
                        "group %s: commit and leave on close got no answer within request_timeout_ms=%d; "
                        "the group may wait for this member until its session times out",
                        self._config.group_id, self._config.request_timeout_ms,
                    )  # fmt: skip
        finally:
            self._state = "stopped"
            if self._listening:
                self._listening = False
                self._core.store.remove_listener(self._metadata_listener)
            await self._core.close()

    def __del__(self) -> None:
        if getattr(self, "_state", "stopped") != "stopped":
            warnings.warn(f"Unclosed AIOKafkaConsumer {self!r}", ResourceWarning, source=self, stacklevel=1)
            self._core.close_abandoned()

    async def _abandon(self) -> None:
        """Stop like a crashed process: no commit, no LeaveGroup (tests of session expiry)."""
        await self._shutdown(leave=False)

    async def __aenter__(self) -> Self:
        await self._begin(self._core.enter)
        return self

    async def _exit(self, exc: BaseException | None) -> None:
        await self.stop()

    # -------------------------------------------------------------- internals
    def _last_poll_time(self) -> float:
        """When the user last polled (now while a poll waits): the KIP-62 poll interval's clock."""
        return time.monotonic() if self._in_poll else self._last_poll

    def _offset_fetch_member(self) -> tuple[str, int] | None:
        """A KIP-848 member's id and epoch, sent with OffsetFetch (None: classic or no group)."""
        member = self._coordinator
        if isinstance(member, ConsumerGroupMember) and member.in_group:
            return member.member_id, member.member_epoch
        return None

    def _consumed_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        out = {}
        for tp, st in self._subs.items():
            if st.has_valid_position:
                assert st.position is not None
                out[tp] = OffsetAndMetadata(st.position, "", st.position_epoch)
        return out

    def _records(self, tp: TopicPartition, chunks: list[Chunk]) -> list[ConsumerRecord[KT, VT]]:
        """ConsumerRecords of drained batch slices (the per-record hot loop of the consumer)."""
        topic, partition = tp.topic, tp.partition
        kd, vd = self._config.key_deserializer, self._config.value_deserializer
        new = ConsumerRecord
        out: list[ConsumerRecord[Any, Any]] = []
        build = native.build_consumer_records
        for records, ts_type, epoch in chunks:
            rows: list[Any] = records  # headers: a tuple of (str, bytes | None), as in aiokafka
            if kd is None and vd is None and build is not None:
                out += build(records, topic, partition, ts_type, epoch)
            else:
                # Positional arguments: a dozen keywords would cost three times as much.
                out += [
                    new(
                        topic,
                        partition,
                        offset,
                        timestamp,
                        ts_type,
                        kd(key) if kd is not None and key is not None else key,
                        vd(value) if vd is not None and value is not None else value,
                        None,
                        -1 if key is None else len(key),
                        -1 if value is None else len(value),
                        headers,
                        epoch,
                    )
                    for offset, timestamp, key, value, headers in rows
                ]
        return out

    # ----------------------------------------------------------------- commits
    @guarded
    async def commit(
        self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata | tuple[Any, ...]] | None = None
    ) -> None:
        """Commit ``offsets`` (default: the positions of every assigned partition)."""
        if self._coordinator is None:
            raise IllegalOperation("commit() needs a group_id")
        self._require_group_call()
        if self._subs.kind == SubscriptionType.NONE:
            raise IllegalStateError("Not subscribed to any topics")
        if self._subs.kind != SubscriptionType.USER_ASSIGNED and not self._coordinator.assignment_done:
            raise IllegalStateError("No partitions assigned")
        self._raise_pending()
        normalized: dict[TopicPartition, OffsetAndMetadata] | None = None
        if offsets is not None:
            normalized = commit_offsets_argument(offsets)
            for tp in normalized:
                if not self._subs.is_assigned(tp):
                    raise IllegalStateError(f"Partition {tp} is not assigned")
        try:
            await self._coordinator.commit(normalized)
        except ClientClosedError:
            raise ConsumerStoppedError("the consumer was stopped during commit()") from None

    # --------------------------------------------------------------- metadata
    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._core.store.partitions_for_topic(topic)

    @guarded
    async def topics(self) -> set[str]:
        """Every topic in the cluster (internal ones excluded unless asked otherwise)."""
        self._require_started()
        conn = await self._core.any_connection()
        response = await conn.send(MetadataRequest(topics=None, allow_auto_topic_creation=False))
        return {
            t.name
            for t in response.topics
            if t.name and not (self._config.exclude_internal_topics and t.is_internal) and not t.error_code
        }

    # ---------------------------------------------------------------- records
    @guarded
    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: float = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[KT, VT]]]:
        """Records per partition, waiting up to ``timeout_ms`` for the first ones ({} if the
        consumer is stopped meanwhile)."""
        only_topic_partitions(partitions)
        if max_records is not None and (
            isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1
        ):
            raise ValueError("`max_records` must be a positive Integer")
        return await self._poll(partitions, timeout_ms, max_records)

    async def _poll(
        self, partitions: tuple[TopicPartition, ...], timeout_ms: float, max_records: int | None
    ) -> dict[TopicPartition, list[ConsumerRecord[KT, VT]]]:
        """One poll of getmany() or getone() (never one through the other: code that wraps
        either method, as tracing instrumentation does, sees only the calls made to it)."""
        self._require_started()
        self._last_poll = time.monotonic()
        if self._coordinator is not None:
            self._coordinator.on_poll()
        self._in_poll += 1
        try:
            return await self._getmany(partitions, timeout_ms, max_records)
        finally:
            self._in_poll -= 1
            self._last_poll = time.monotonic()

    async def _getmany(
        self, partitions: tuple[TopicPartition, ...], timeout_ms: float, max_records: int | None
    ) -> dict[TopicPartition, list[ConsumerRecord[KT, VT]]]:
        drained = await self._drain(partitions, timeout_ms, max_records)
        with native.gc_paused():
            out = {tp: self._records(tp, chunks) for tp, chunks in drained.items()}
        self._fetcher.stats.records_consumed += sum(map(len, out.values()))
        return out

    async def _drain(
        self, partitions: tuple[TopicPartition, ...], timeout_ms: float, max_records: int | None
    ) -> dict[TopicPartition, list[Chunk]]:
        limit = max_records or self._config.max_poll_records or 2**31
        only = set(partitions) if partitions else None
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if self._closed:
                return {}
            self._raise_pending(only)
            with native.gc_paused():
                drained = self._fetcher.drain(limit, only)
            if drained:
                if self._delivered is not None:
                    self._delivered.delivered(drained)
                await self._fetcher.send_freed()  # the broker works while the caller builds records
                return drained
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {}
            with anyio.move_on_after(remaining):
                await self._fetcher.wait_for_data()

    @guarded
    async def getmany_batches(
        self, *partitions: TopicPartition, timeout_ms: float = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[Chunk]]:
        """What getmany() returns, as decoded batch slices ``(records, timestamp_type,
        leader_epoch)`` without a ConsumerRecord per record (deserializers are not applied):
        for readers that turn records into columns, such as the Spark source."""
        only_topic_partitions(partitions)
        self._require_started()
        self._last_poll = time.monotonic()
        try:
            drained = await self._drain(partitions, timeout_ms, max_records)
        finally:
            self._last_poll = time.monotonic()
        self._fetcher.stats.records_consumed += sum(len(c[0]) for chunks in drained.values() for c in chunks)
        return drained

    @guarded
    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[KT, VT]:
        """The next record (waits as long as it takes; ConsumerStoppedError if stopped meanwhile)."""
        only_topic_partitions(partitions)
        while True:
            batch = await self._poll(partitions, 60_000, 1)
            for records in batch.values():
                return records[0]
            if self._closed:
                raise ConsumerStoppedError("the consumer was stopped")

    def __aiter__(self) -> AsyncIterator[ConsumerRecord[KT, VT]]:
        if self._closed:
            raise ConsumerStoppedError("the consumer is stopped")
        return self

    async def __anext__(self) -> ConsumerRecord[KT, VT]:
        try:
            return await self.getone()
        except (ConsumerStoppedError, ClientClosedError):
            raise StopAsyncIteration from None

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group membership to pass to ``send_offsets_to_transaction`` (KIP-447).

        Read it before sending the offsets of records this consumer returned: when a
        rebalance took any of their partitions away since (even to give them back, with
        positions reset to the committed offsets), it is the membership the records came
        with, whose commit the group coordinator rejects, so the transaction aborts instead
        of writing those records twice. Otherwise it is the current membership; during a
        rebalance, the last one held (never "no generation", which the coordinator would
        not check).
        """
        if self._delivered is None:
            raise IllegalStateError("group_metadata() needs a consumer with a group_id")
        return self._delivered.group_metadata()

    # ----------------------------------------------------------- observability
    def metrics(self) -> dict[str, Any]:
        """Fetch counters: ``fetches``, KIP-951 ``hints_applied`` / ``hints_ignored``, and
        KIP-392 fetch from follower: ``bytes_fetched_by_node`` (node id -> bytes of
        records), ``preferred_read_replicas`` (partition -> the replica it is read from,
        for partitions not read from their leader), ``read_replica_redirects`` and
        ``read_replica_fallbacks`` (reason -> times a partition went back to its leader);
        connections: ``sasl_reauthentications`` (KIP-368) and ``connections_closed_by_broker``;
        under ``"kafka"`` the Java client's metrics by group (``kafka_metrics()``)."""
        stats = self._fetcher.stats
        return {
            **self._core.connection_metrics(),
            "fetches": stats.fetches,
            "hints_applied": stats.hints_applied,
            "hints_ignored": stats.hints_ignored,
            **self._fetcher.replicas.metrics(),
            "kafka": self._core.metrics.read().by_group(),
        }

    @property
    def fetcher(self) -> Fetcher:
        """The fetcher (its ``stats`` and buffer counters are for tests and metrics)."""
        return self._fetcher

    @property
    def coordinator(self) -> GroupMember | None:
        """The group membership: classic ``GroupCoordinator`` or KIP-848 ``ConsumerGroupMember``."""
        return self._coordinator

    @property
    def positions(self) -> PositionManager:
        return self._positions


def _membership_now(member: GroupMember) -> ConsumerGroupMetadata:
    """A group member's membership now (generation -1 and no member id while not in the group)."""
    if not member.in_group:
        return ConsumerGroupMetadata(member.group_id, -1, "", member.group_instance_id)
    return ConsumerGroupMetadata(
        member.group_id, member.generation_id, member.member_id, member.group_instance_id
    )


Consumer = AIOKafkaConsumer

__all__ = [
    "AIOKafkaConsumer",
    "Consumer",
    "ConsumerRebalanceListener",
    "OffsetAndTimestamp",
    "PartitionAssignor",
]
