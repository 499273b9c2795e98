"""Where each partition starts and whether its position is still valid.

* Starting positions: the group's committed offset (OffsetFetch, with the leader epoch it
  was committed with), else ``auto_offset_reset``.
* Resets (earliest, latest, by timestamp) go through the request layer's ListOffsets
  (KIP-207: v5+, OFFSET_NOT_AVAILABLE retried after backoff without a metadata refresh).
* KIP-320 validation: after the leader epoch of a partition moved on, OffsetForLeaderEpoch
  (v3+) asks the new leader where the epoch of our last consumed record ends. An end offset
  below our position means the log was truncated: resume at the divergence point, or raise
  :class:`LogTruncationError` naming the lost offsets when auto_offset_reset="none".

The work runs as short tasks in the fetcher's task group; each marks its partitions busy
so the fetcher neither fetches nor re-plans them meanwhile, and wakes the fetcher when done.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable

import anyio
import anyio.abc

from aiokafka_lead.consumer.config import GroupConfig
from aiokafka_lead.consumer.errors import LogTruncationError, NoOffsetForPartitionError
from aiokafka_lead.consumer.subscription import PartitionState, ResetStrategy, SubscriptionState
from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.error_code import PARTITION_REFRESH
from aiokafka_lead.errors import KafkaError, error_for_code
from aiokafka_lead.protocol.messages import OffsetForLeaderEpochRequest
from aiokafka_lead.ratelog import RateLimitedLog
from aiokafka_lead.requests.lookup import Lookups
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)
#: failed look-ups or validations of a partition's position in a row before an operator is warned
WARN_AFTER_FAILURES = 3

EARLIEST, LATEST = -2, -1
VALIDATION_MIN_VERSION = 3


class PositionManager:
    """Starting positions, resets and KIP-320 validation for the assigned partitions."""

    def __init__(
        self,
        core: ClientCore,
        subscriptions: SubscriptionState,
        lookup: Lookups,
        config: GroupConfig,
        *,
        report_error: Callable[[KafkaError], None],
        member: Callable[[], tuple[str, int] | None] | None = None,
    ) -> None:
        self._core = core
        #: KIP-848: the member's (id, epoch) for OffsetFetch v9, None outside such a group
        self._member = member
        self._subs = subscriptions
        self.lookup = lookup
        self._backoff = core.backoff
        self._config = config
        self._report_error = report_error
        self._busy: set[TopicPartition] = set()
        #: (partition, divergence offset, old position) of every truncation detected
        self.truncations: list[tuple[TopicPartition, int, int]] = []
        self.validations = 0
        self._warn = RateLimitedLog(log)

    def busy(self, tp: TopicPartition) -> bool:
        return tp in self._busy

    # ------------------------------------------------------------- task starts
    def start_initialize(self, tg: anyio.abc.TaskGroup, tps: list[TopicPartition]) -> None:
        self._busy.update(tps)
        tg.start_soon(self._guarded, "initialize", tps, self._initialize)

    def start_reset(self, tg: anyio.abc.TaskGroup, tps: list[TopicPartition]) -> None:
        self._busy.update(tps)
        tg.start_soon(self._guarded, "reset", tps, self._reset)

    def start_validate(self, tg: anyio.abc.TaskGroup, tps: list[TopicPartition]) -> None:
        self._busy.update(tps)
        tg.start_soon(self._guarded, "validate", tps, self._validate)

    async def _guarded(
        self, what: str, tps: list[TopicPartition], work: Callable[[list[TopicPartition]], object]
    ) -> None:
        try:
            await work(tps)  # type: ignore[misc]
        except KafkaError as exc:
            log.debug("%s of %s failed: %r", what, tps, exc)
            if not exc.retriable:
                self._report_error(exc)
            self._back_off(tps)
        finally:
            self._busy.difference_update(tps)
            self._subs.notify()

    def _back_off(self, tps: Iterable[TopicPartition], why: object = None) -> None:
        now = time.monotonic()
        for tp in tps:
            st = self._subs.get(tp)
            if st is not None:
                st.retry_at = now + self._backoff.delay_s(st.failures)
                st.failures += 1
                if st.failures >= WARN_AFTER_FAILURES:  # it lasts: one WARNING, not one per retry
                    self._warn.warning(
                        ("position", tp),
                        "the position of %s-%d cannot be looked up or validated (%d attempts in a row); "
                        "retrying; last: %s",
                        tp.topic, tp.partition, st.failures, why or "no usable answer",
                    )  # fmt: skip

    # ------------------------------------------------------ starting positions
    async def committed(self, tps: Collection[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        group_id = self._config.group_id
        if group_id is None or not tps:
            return {}
        return await self.lookup.committed_offsets(group_id, tps, member=self._member)

    async def _initialize(self, tps: list[TopicPartition]) -> None:
        committed = await self.committed(tps)
        store = self._core.store
        for tp in tps:
            st = self._subs.get(tp)
            if st is None or st.position is not None or st.reset_to is not None:
                continue
            c = committed.get(tp)
            if c is not None:
                # a committed epoch is checked against the current leader first (KIP-320)
                validated = -1 if c.leader_epoch >= 0 else store.leader_epoch(tp)
                self._subs.seek(tp, c.offset, c.leader_epoch, validated_epoch=validated)
            elif self._subs.default_reset == ResetStrategy.NONE:
                self._subs.fail_partition(tp, NoOffsetForPartitionError(partitions={tp}))
            else:
                spec = EARLIEST if self._subs.default_reset == ResetStrategy.EARLIEST else LATEST
                self._subs.request_reset(tp, spec)

    # ------------------------------------------------------------------ resets
    async def _reset(self, tps: list[TopicPartition]) -> None:
        wanted: dict[TopicPartition, tuple[int, int]] = {}
        for tp in tps:
            st = self._subs.get(tp)
            if st is not None and st.reset_to is not None:
                wanted[tp] = (st.reset_to, st.generation)
        if not wanted:
            return
        store = self._core.store
        unled = [tp for tp in wanted if store.leader_for(tp) is None]
        if unled:  # e.g. just assigned: wait for the refresh that names their leaders
            version = store.version
            store.request_refresh(f"reset: no leader for {len(unled)} partition(s)")
            with anyio.move_on_after(self._core.config.request_timeout_ms / 1000):
                await store.wait_for_change(version)
            unled = [tp for tp in wanted if store.leader_for(tp) is None]
        if unled:
            # a partition without a usable leader (an unknown or refused topic) must not hold
            # back the others' resets (ListOffsets answers all or nothing): it backs off alone
            for tp in unled:
                del wanted[tp]
            store.request_refresh(f"reset: no leader for {len(unled)} partition(s)")
            self._back_off(unled)
            if not wanted:
                return
        result = await self.lookup.list_offsets(
            {tp: spec for tp, (spec, _) in wanted.items()}, self._config.isolation_level
        )
        unusable = []
        for tp, info in result.items():
            st = self._subs.get(tp)
            if tp not in wanted:
                continue  # an answer for a partition we did not ask about
            spec, generation = wanted[tp]
            if st is None or st.generation != generation or st.reset_to != spec:
                continue
            if info.offset < 0 and spec in (EARLIEST, LATEST):
                unusable.append(tp)  # the log's start or end is never unknown: ask again
                continue
            if info.offset < 0:  # no record at or after the timestamp: go to the end
                self._subs.request_reset(tp, LATEST)
                continue
            log.debug("reset %s-%d to offset %d (spec %d)", tp.topic, tp.partition, info.offset, spec)
            epoch = info.leader_epoch
            known = store.leader_epoch(tp)
            if epoch > known >= 0:
                # newer than the leader we know: our metadata lags, or the answer is wrong; a
                # position epoch no record of the log carries would make every fetch come back
                # empty (the leader knows no such epoch), so go without one until records come
                store.request_refresh(f"reset: ListOffsets epoch {epoch} above {known}")
                epoch = -1
            self._subs.seek(tp, info.offset, epoch, validated_epoch=known)
        if unusable:
            log.info("ListOffsets answered no offset for the start or end of %s; asking again", unusable)
            self._back_off(unusable)

    # -------------------------------------------------------------- validation
    async def _validate(self, tps: list[TopicPartition]) -> None:
        store = self._core.store
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in tps:
            leader = store.leader_for(tp)
            if leader is not None:
                by_node.setdefault(leader.node_id, []).append(tp)
        async with anyio.create_task_group() as tg:
            for node_id, group in by_node.items():
                tg.start_soon(self._validate_on_guarded, node_id, group)

    async def _validate_on_guarded(self, node_id: int, tps: list[TopicPartition]) -> None:
        """One node's failure backs off its own partitions: a KafkaError escaping the task
        group above would arrive as an ExceptionGroup, past ``_guarded``, and end the fetcher."""
        try:
            await self._validate_on(node_id, tps)
        except KafkaError as exc:
            log.debug("validate on node %d of %s failed: %r", node_id, tps, exc)
            if not exc.retriable:
                self._report_error(exc)
            self._core.store.request_refresh(f"validate on node {node_id} failed: {type(exc).__name__}")
            self._back_off(tps, repr(exc))

    async def _validate_on(self, node_id: int, tps: list[TopicPartition]) -> None:
        store = self._core.store
        conn = await self._core.pool.connection(node_id)
        version = conn.version_for(OffsetForLeaderEpochRequest.API_KEY)
        asked: dict[TopicPartition, tuple[int, int, int]] = {}
        topics: dict[str, list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition]] = {}
        for tp in tps:
            st = self._subs.get(tp)
            if st is None or st.position is None:
                continue
            epoch = store.leader_epoch(tp)
            if version < VALIDATION_MIN_VERSION:
                st.validated_epoch = epoch  # the broker cannot tell us; trust the position
                continue
            asked[tp] = (st.generation, st.position, epoch)
            topics.setdefault(tp.topic, []).append(
                OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                    partition=tp.partition, current_leader_epoch=epoch, leader_epoch=st.position_epoch
                )
            )
        if not asked:
            return
        request = OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=t, partitions=ps)
                for t, ps in topics.items()
            ],
        )
        self.validations += 1
        response = await conn.send(request, version=version)
        retry: list[TopicPartition] = []
        answered: set[TopicPartition] = set()
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.topic, p.partition)
                answered.add(tp)
                st = self._subs.get(tp)
                if tp not in asked or st is None:
                    continue
                generation, position, epoch = asked[tp]
                if st.generation != generation or st.position != position:
                    continue
                if p.error_code:
                    where = f"OffsetForLeaderEpoch {tp.topic}-{tp.partition} from {conn.broker}"
                    err = error_for_code(p.error_code, where)
                    if p.error_code in PARTITION_REFRESH:
                        store.request_refresh(f"validate {tp.topic}-{tp.partition}: {type(err).__name__}")
                    if not err.retriable:
                        self._report_error(err)
                    retry.append(tp)
                    continue
                self.check_end_offset(
                    tp, st, p.end_offset, p.leader_epoch, epoch, source="OffsetForLeaderEpoch"
                )
        self._back_off(retry + [tp for tp in asked if tp not in answered])

    def check_end_offset(
        self,
        tp: TopicPartition,
        st: PartitionState,
        end_offset: int,
        end_epoch: int,
        leader_epoch: int,
        *,
        source: str,
    ) -> None:
        """Apply one (epoch, end offset) answer for our position's epoch (sync)."""
        assert st.position is not None
        if end_offset < 0 or end_epoch < 0:
            log.info("%s: no epoch info for %s-%d; resetting its position", source, tp.topic, tp.partition)
            self._reset_or_fail(tp, st, st.position)
        elif end_offset < st.position:
            self.truncated(tp, st, end_offset, end_epoch, source=source)
        else:
            st.validated_epoch = max(st.validated_epoch, leader_epoch)
            st.express = True

    def truncated(
        self, tp: TopicPartition, st: PartitionState, end_offset: int, end_epoch: int, *, source: str
    ) -> None:
        """The log diverged from what we consumed at ``end_offset`` (KIP-320)."""
        assert st.position is not None
        store = self._core.store
        position = st.position
        if end_offset < 0 or end_epoch < 0:
            self._reset_or_fail(tp, st, position)
            return
        if end_offset >= position:
            # the leader knows our epoch under another end: adopt its epoch, keep the position
            st.position_epoch = end_epoch
            st.validated_epoch = store.leader_epoch(tp)
            return
        self.truncations.append((tp, end_offset, position))
        if self._subs.default_reset == ResetStrategy.NONE:
            self._subs.fail_partition(tp, LogTruncationError({tp: (end_offset, position)}))
            return
        log.warning(
            "%s: log of %s-%d truncated at %d below position %d (offsets %d..%d lost); resuming at %d",
            source,
            tp.topic,
            tp.partition,
            end_offset,
            position,
            end_offset,
            position - 1,
            end_offset,
        )
        self._subs.seek(tp, end_offset, end_epoch, validated_epoch=store.leader_epoch(tp))

    def _reset_or_fail(self, tp: TopicPartition, st: PartitionState, position: int) -> None:
        strategy = self._subs.default_reset
        if strategy == ResetStrategy.NONE:
            self._subs.fail_partition(tp, LogTruncationError({tp: (position, position)}))
            return
        self._subs.request_reset(tp, EARLIEST if strategy == ResetStrategy.EARLIEST else LATEST)
