"""AIOKafkaConsumer: aiokafka's public consumer API over the fetcher and the group coordinator.

Everything that runs in the background (metadata refresher, fetcher, group coordinator,
heartbeats, auto-commit) lives in the client's task group, started with ``tg.start`` so
``start()`` returns only once they run; ``stop()`` commits, leaves the group and cancels
them all. The public methods only read and mutate the synchronous SubscriptionState and
wait on events; no lock is held across an await.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import re
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, Self, TypeVar

import anyio
import anyio.abc

from aiokafka_lead.arguments import (
    check_timestamp,
    check_topic,
    check_topic_partition,
    check_topic_partitions,
)
from aiokafka_lead.client import ClientCore, guarded
from aiokafka_lead.consumer.assignors import PartitionAssignor
from aiokafka_lead.consumer.buffer import Chunk
from aiokafka_lead.consumer.config import ConsumerConfig
from aiokafka_lead.consumer.consumer_protocol import ConsumerGroupMember
from aiokafka_lead.consumer.coordinator import ConsumerRebalanceListener, topics_needed
from aiokafka_lead.consumer.errors import ConsumerStoppedError, IllegalOperation, IllegalStateError
from aiokafka_lead.consumer.fetcher import Fetcher
from aiokafka_lead.consumer.group_common import GroupMember
from aiokafka_lead.consumer.group_protocols import create_group_member
from aiokafka_lead.consumer.keywords import ConsumerKeywords
from aiokafka_lead.consumer.offsets import EARLIEST, LATEST, PositionManager
from aiokafka_lead.consumer.subscription import ResetStrategy, SubscriptionState, SubscriptionType
from aiokafka_lead.errors import KafkaError, KafkaTimeoutError
from aiokafka_lead.metadata import MetadataChange
from aiokafka_lead.protocol.messages import MetadataRequest
from aiokafka_lead.records import native
from aiokafka_lead.requests.lookup import Lookups
from aiokafka_lead.runtime import ClientClosedError, ExitOnLeave
from aiokafka_lead.structs import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)
from aiokafka_lead.validation import commit_offsets_argument

log = logging.getLogger(__name__)

KT = TypeVar("KT")
VT = TypeVar("VT")


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic GC while a poll decodes and builds its records (synchronous, no await).

    A poll allocates a few objects per record, and most survive into the caller's hands;
    left on, the collector would run every 700 allocations and repeatedly walk the older
    generations, which costs as much as decoding. Paused, the next allocation after this
    block collects the new objects once. Nothing here creates reference cycles.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class AIOKafkaConsumer(ConsumerKeywords[KT, VT], ExitOnLeave):
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
        self._key_deserializer: Callable[[bytes], KT] | None = config.key_deserializer
        self._value_deserializer: Callable[[bytes], VT] | None = config.value_deserializer
        self._subs = SubscriptionState(ResetStrategy(config.auto_offset_reset))
        self._errors: list[KafkaError] = []
        self._listening = False
        self._last_poll = time.monotonic()
        self._in_poll = 0
        self._coordinator: GroupMember | None = None
        self._core = ClientCore(
            "AIOKafkaConsumer",
            config,
            topics=lambda: topics_needed(self._subs, self._coordinator),
            # aiokafka's and Java's default: asking for a missing topic's metadata creates it
            # where the brokers allow it (auto.create.topics.enable)
            allow_auto_topic_creation=config.allow_auto_create_topics,
        )
        self._core.extra_setup = self._setup
        self._lookup = Lookups(self._core)
        self._positions = PositionManager(
            self._core,
            self._subs,
            self._lookup,
            config,
            report_error=self._report_error,
            member=self._offset_fetch_member,
        )
        self._fetcher = Fetcher(
            self._core, self._subs, self._positions, config, report_error=self._report_error
        )
        if config.group_id is not None:
            self._coordinator = create_group_member(
                config,
                self._core,
                self._subs,
                self._lookup,
                consumed_offsets=self._consumed_offsets,
                report_error=self._report_error,
                last_poll=lambda: time.monotonic() if self._in_poll else self._last_poll,
            )
        if topics:
            self._subs.subscribe(topics)
        # a poll waits for records or an error: partition errors ("none") wake it too
        self._subs.listeners.append(self._fetcher.notify_data)
        self._state = "new"  # from here on, dropping it unclosed warns (as aiokafka's)

    # ----------------------------------------------------------------- lifecycle
    async def _setup(self, tg: anyio.abc.TaskGroup) -> None:
        self._core.store.add_listener(self._on_metadata)
        self._listening = True
        await tg.start(self._fetcher.run)
        if self._coordinator is not None:
            await tg.start(self._coordinator.run)
        self._on_metadata(MetadataChange("start"))

    async def start(self) -> None:
        """Connect, fetch metadata, start the background tasks and, as aiokafka's start(),
        join the group: with a group_id and a subscription it returns once the first
        assignment is in and every assigned partition has its starting position (so
        records produced after start() returns are consumed under "latest"); errors of
        the join (e.g. InvalidSessionTimeoutError) are raised here."""
        await self._begin(self._core.start)

    async def _begin(self, start: Callable[[], Awaitable[None]]) -> None:
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

    async def _until_first_assignment(self) -> None:
        member = self._coordinator
        auto = (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)
        if member is None or self._subs.kind not in auto:
            return

        def ready() -> bool:
            if self._errors:  # a partition's own error ("none") waits for the first poll
                raise self._errors.pop(0)
            return member.assignment_done and all(self._position_settled(tp) for tp in self._subs.assigned())

        await self._subs.wait_until(ready)

    def _position_settled(self, tp: TopicPartition) -> bool:
        """A starting position is known, or the user must give one (auto_offset_reset="none")."""
        st = self._subs.get(tp)
        if st is None or st.error is not None:
            return True
        return st.has_valid_position and not self._positions.busy(tp)

    async def stop(self) -> None:
        """Commit (if auto-commit), leave the group, and stop every background task.

        A getmany() waiting at that moment returns {} and a waiting getone() (or
        ``async for``) ends, as in aiokafka; the rebalance listener is not called.
        """
        await self._shutdown(leave=True)

    close = stop

    @property
    def _closed(self) -> bool:
        return self._state in ("stopping", "stopped")

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
                self._core.store.remove_listener(self._on_metadata)
            await self._core.close()

    def __del__(self) -> None:
        if getattr(self, "_state", "stopped") != "stopped":
            warnings.warn(f"Unclosed AIOKafkaConsumer {self!r}", ResourceWarning, source=self, stacklevel=1)

    async def _abandon(self) -> None:
        """Stop like a crashed process: no commit, no LeaveGroup (tests of session expiry)."""
        await self._shutdown(leave=False)

    async def __aenter__(self) -> Self:
        await self._begin(self._core.enter)
        return self

    async def _exit(self, exc: BaseException | None) -> None:
        await self.stop()

    def _require_started(self) -> None:
        if self._closed:
            raise ConsumerStoppedError("the consumer is stopped")
        self._core.host.require_running()

    def _require_group_call(self) -> None:
        """Commits may still run while stop() leaves the group (its final auto-commit)."""
        if self._state == "stopped":
            raise ConsumerStoppedError("the consumer is stopped")
        self._core.host.require_running()

    # -------------------------------------------------------------- internals
    def _report_error(self, error: KafkaError) -> None:
        log.debug("consumer error for the user: %r", error)
        # a partition that keeps failing the same way reports once until the user has seen it
        if not any(type(e) is type(error) and str(e) == str(error) for e in self._errors):
            self._errors.append(error)
        self._fetcher.notify_data()
        self._subs.notify()

    def _raise_pending(self, only: set[TopicPartition] | None = None) -> None:
        if self._errors:
            raise self._errors.pop(0)
        error = self._subs.partition_error(only)
        if error is not None:
            raise error

    def _on_metadata(self, change: MetadataChange) -> None:
        if self._coordinator is not None:
            self._coordinator.on_metadata_change()
            return
        if self._subs.kind == SubscriptionType.AUTO_PATTERN:
            self._subs.match_pattern(self._core.store.topics())
        if self._subs.kind in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN):
            self._assign_all_partitions()

    def _assign_all_partitions(self) -> None:
        """Without a group, subscribe() means every partition of the matched topics (aiokafka)."""
        wanted = set()
        for topic in self._subs.topics:
            for p in self._core.store.partitions_for_topic(topic) or ():
                wanted.add(TopicPartition(topic, p))
        if wanted != self._subs.assigned():
            self._subs.set_assignment(wanted)

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
        kd, vd = self._key_deserializer, self._value_deserializer
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

    # ------------------------------------------------------------ subscription
    def subscribe(
        self,
        topics: Iterable[str] = (),
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Subscribe to topics or a regex pattern; with a group_id, partitions come from the group.

        A pattern matches a topic as ``re.match`` does (from the start of the name, as aiokafka).
        """
        if not (topics or pattern):
            raise TypeError("You should provide either `topics` or `pattern`")
        if topics and pattern:
            raise TypeError("You can't provide both `topics` and `pattern`")
        if topics and not isinstance(topics, (tuple, set, frozenset, list)):
            raise TypeError("Topics should be list of strings")
        if pattern is not None and not isinstance(pattern, re.Pattern):
            try:
                pattern = re.compile(pattern)
            except (re.error, TypeError) as err:
                raise ValueError(f"{pattern!r} is not a valid pattern: {err}") from err
        if listener is not None and not isinstance(listener, ConsumerRebalanceListener):
            raise TypeError("listener should be an instance of ConsumerRebalanceListener")
        for topic in topics:
            check_topic(topic)
        self._subs.subscribe(topics, pattern)
        if self._coordinator is not None:
            self._coordinator.listener = listener
            self._coordinator.request_rejoin("subscription changed")
        elif self._core.host.running:
            self._on_metadata(MetadataChange("subscribe"))
        if self._core.host.running:
            self._core.store.request_refresh("consumer subscribed")

    def subscription(self) -> frozenset[str] | set[str]:
        """The subscribed (or pattern-matched) topics: a frozenset, or ``set()`` before any."""
        if self._subs.kind == SubscriptionType.NONE:
            return set()
        return self._subs.topics

    def unsubscribe(self) -> None:
        self._subs.unsubscribe()
        self._fetcher.discard_unassigned()
        if self._coordinator is not None and self._core.host.running and self._coordinator.in_group:
            self._core.task_group.start_soon(self._coordinator.leave, "unsubscribed")

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Manual assignment (no group membership); positions start from committed or reset."""
        if isinstance(partitions, str | bytes) or not isinstance(partitions, Iterable):
            check_topic_partitions(partitions)  # raises its TypeError
        tps = check_topic_partitions([TopicPartition(*p) if isinstance(p, tuple) else p for p in partitions])
        self._subs.assign_from_user(tps)
        self._fetcher.discard_unassigned()
        if self._core.host.running:
            missing = [tp.topic for tp in tps if self._core.store.partitions_for_topic(tp.topic) is None]
            if missing:
                self._core.store.request_refresh(f"assigned unknown topics {sorted(set(missing))}")

    def assignment(self) -> frozenset[TopicPartition] | set[TopicPartition]:
        """The partitions assigned now: a frozenset, or ``set()`` while there is no assignment."""
        if self._subs.kind == SubscriptionType.NONE:
            return set()
        member = self._coordinator
        auto = self._subs.kind in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)
        if auto and member is not None and not member.assignment_done:
            return set()
        return frozenset(self._subs.assigned())

    # --------------------------------------------------------------- positions
    def seek(self, partition: TopicPartition, offset: int) -> None:
        """The next getmany()/getone() starts at ``offset`` (it also answers a pending
        NoOffsetForPartitionError or OffsetOutOfRangeError of that partition)."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError("Offset must be a positive integer")
        self._subs.seek(partition, offset, -1, validated_epoch=self._core.store.leader_epoch(partition))

    def _assigned_targets(self, partitions: tuple[TopicPartition, ...]) -> list[TopicPartition]:
        """seek_to_*'s partitions: TopicPartitions, all assigned (default: the whole assignment)."""
        _only_topic_partitions(partitions)
        if not partitions:
            return sorted(self._subs.assigned())
        not_assigned = set(partitions) - self._subs.assigned()
        if not_assigned:
            raise IllegalStateError(f"Partitions {not_assigned} are not assigned")
        return list(partitions)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> bool:
        """Start over at the log start; True once the new positions are known (within the
        request timeout, as aiokafka's: False if not yet, the reset still happens)."""
        return await self._reset_and_wait(self._assigned_targets(partitions), EARLIEST)

    async def seek_to_end(self, *partitions: TopicPartition) -> bool:
        """Jump to the log end; True once the new positions are known (see seek_to_beginning)."""
        return await self._reset_and_wait(self._assigned_targets(partitions), LATEST)

    async def _reset_and_wait(self, tps: list[TopicPartition], spec: int) -> bool:
        for tp in tps:
            self._subs.request_reset(tp, spec)
        if not self._core.host.running:
            return False
        with anyio.move_on_after(self._config.request_timeout_ms / 1000):
            await self._subs.wait_until(lambda: all(self._position_settled(tp) for tp in tps))
            return True
        return False

    @guarded
    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int | None]:
        if self._config.group_id is None:
            raise IllegalOperation("seek_to_committed() needs a group_id")
        tps = self._assigned_targets(partitions)
        committed = await self._positions.committed(tps)
        out: dict[TopicPartition, int | None] = {}
        for tp in tps:
            c = committed.get(tp)
            out[tp] = None if c is None else c.offset
            if c is not None:
                self._subs.seek(tp, c.offset, c.leader_epoch, validated_epoch=-1)
        return out

    @guarded
    async def position(self, partition: TopicPartition, timeout_ms: float | None = None) -> int:
        """The offset of the next record for ``partition`` (waits for a reset/lookup to finish)."""
        self._require_started()
        timeout = (self._config.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        try:

            def ready() -> bool:
                st = self._subs.state(partition)
                if st.has_valid_position and not self._positions.busy(partition):
                    return True
                self._raise_pending()
                return False

            with anyio.fail_after(timeout):
                # positions, busy marks and reported errors all notify the subscription
                await self._subs.wait_until(ready)
            position = self._subs.state(partition).position
            assert position is not None
            return position
        except TimeoutError:
            unknown = self._core.store.partitions_for_topic(partition.topic) is None
            why = f" (topic {partition.topic!r} is not in the cluster's metadata)" if unknown else ""
            message = f"no position for {partition} within {timeout * 1000:.0f} ms{why}"
            raise KafkaTimeoutError(message) from None

    def highwater(self, partition: TopicPartition) -> int | None:
        """The highest high watermark the fetcher has seen (never goes back, KIP-207)."""
        return self._subs.state(partition).highwater

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        return self._subs.state(partition).last_stable_offset

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """When the last fetch answer for ``partition`` came (ms since the epoch; None: none yet)."""
        return self._subs.state(partition).last_fetch_ms

    def paused(self) -> set[TopicPartition]:
        return self._subs.paused()

    def pause(self, *partitions: TopicPartition) -> None:
        _only_topic_partitions(partitions)
        self._subs.pause(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        _only_topic_partitions(partitions)
        self._subs.resume(partitions)

    # ----------------------------------------------------------------- commits
    @guarded
    async def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset for ``partition`` (None if there is none)."""
        if self._config.group_id is None:
            raise IllegalOperation("committed() needs a group_id")
        self._require_started()
        c = (await self._positions.committed([partition])).get(partition)
        return None if c is None else c.offset

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

    # ---------------------------------------------------------------- offsets
    async def _list(self, specs: Mapping[TopicPartition, int]) -> dict[TopicPartition, Any]:
        self._require_started()
        self._subs.extra_topics.update(tp.topic for tp in specs)
        return await self._lookup.list_offsets(specs, self._config.isolation_level)

    @guarded
    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        result = await self._list(dict.fromkeys(partitions, EARLIEST))
        return {tp: info.offset for tp, info in result.items()}

    @guarded
    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Latest offsets; never lower than one this consumer returned before (KIP-207)."""
        result = await self._list(dict.fromkeys(partitions, LATEST))
        floor = self._subs.end_offset_floor
        out = {}
        for tp, info in result.items():
            value = max(info.offset, floor.get(tp, -1))
            floor[tp] = value
            out[tp] = value
        return out

    @guarded
    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        for tp, ts in timestamps.items():
            check_topic_partition(tp)
            if isinstance(ts, int) and not isinstance(ts, bool) and ts < 0:
                raise ValueError(f"timestamp for {tp} must be >= 0")  # aiokafka's error
            check_timestamp(ts)
        result = await self._list(dict(timestamps))
        return {
            tp: None
            if info.offset < 0
            else OffsetAndTimestamp(info.offset, info.timestamp, info.leader_epoch)
            for tp, info in result.items()
        }

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
        _only_topic_partitions(partitions)
        if max_records is not None and (
            isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1
        ):
            raise ValueError("`max_records` must be a positive Integer")
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
        limit = max_records or self._config.max_poll_records or 2**31
        only = set(partitions) if partitions else None
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if self._closed:
                return {}
            self._raise_pending(only)
            with _gc_paused():
                drained = self._fetcher.drain(limit, only)
            if drained:
                await self._fetcher.send_freed()  # the broker works while we build records
                with _gc_paused():
                    return {tp: self._records(tp, chunks) for tp, chunks in drained.items()}
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {}
            with anyio.move_on_after(remaining):
                await self._fetcher.wait_for_data()

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[KT, VT]:
        """The next record (waits as long as it takes; ConsumerStoppedError if stopped meanwhile)."""
        while True:
            batch = await self.getmany(*partitions, timeout_ms=60_000, max_records=1)
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

        Read it right before the call: a rebalance changes the generation, and the group
        coordinator rejects offsets sent with a stale one (the transaction must then abort).
        """
        coord = self._coordinator
        if coord is None:
            raise IllegalStateError("group_metadata() needs a consumer with a group_id")
        if not coord.in_group:
            return ConsumerGroupMetadata(coord.group_id, -1, "", coord.group_instance_id)
        return ConsumerGroupMetadata(
            coord.group_id, coord.generation_id, coord.member_id, coord.group_instance_id
        )

    # ----------------------------------------------------------- observability
    def metrics(self) -> dict[str, Any]:
        """Fetch counters: ``fetches``, KIP-951 ``hints_applied`` / ``hints_ignored``, and
        KIP-392 fetch from follower: ``bytes_fetched_by_node`` (node id -> bytes of
        records), ``preferred_read_replicas`` (partition -> the replica it is read from,
        for partitions not read from their leader), ``read_replica_redirects`` and
        ``read_replica_fallbacks`` (reason -> times a partition went back to its leader);
        connections: ``sasl_reauthentications`` (KIP-368) and ``connections_closed_by_broker``."""
        stats = self._fetcher.stats
        return {
            **self._core.connection_metrics(),
            "fetches": stats.fetches,
            "hints_applied": stats.hints_applied,
            "hints_ignored": stats.hints_ignored,
            **self._fetcher.replicas.metrics(),
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


def _only_topic_partitions(partitions: tuple[object, ...]) -> None:
    """The ``*partitions`` of a call are TopicPartitions (aiokafka's TypeError otherwise)."""
    if not all(isinstance(p, TopicPartition) for p in partitions):
        raise TypeError("partitions must be TopicPartition instances")


Consumer = AIOKafkaConsumer

__all__ = [
    "AIOKafkaConsumer",
    "Consumer",
    "ConsumerRebalanceListener",
    "OffsetAndTimestamp",
    "PartitionAssignor",
]
