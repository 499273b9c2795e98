"""Assignment state: which partitions this consumer owns and where it stands in each.

Plain synchronous state shared by the fetcher, the position validator, the group
coordinator and the public API. A partition's *position* is the next offset to hand to
the user plus the leader epoch of the record before it (KIP-320), so a leader change can
be checked for log truncation. Mutators never await; waiters use :meth:`wait_for_change`.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import anyio

from aiokafka_lead.consumer.errors import IllegalStateError
from aiokafka_lead.structs import TopicPartition


class ResetStrategy(enum.Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"


@dataclass(slots=True)
class PartitionState:
    """One assigned partition."""

    position: int | None = None
    #: leader epoch of the last consumed record (-1: unknown); sent as last_fetched_epoch
    position_epoch: int = -1
    #: a pending reset: an OffsetSpec (-2 earliest, -1 latest) or a timestamp; None: none
    reset_to: int | None = None
    #: the store's leader epoch the position was last checked against (KIP-320)
    validated_epoch: int = -1
    paused: bool = False
    #: highest high watermark / last stable offset seen (never goes back, KIP-207)
    highwater: int | None = None
    last_stable_offset: int | None = None
    log_start_offset: int | None = None
    #: wall-clock ms of the last fetch answer for this partition (aiokafka's last_poll_timestamp)
    last_fetch_ms: int | None = None
    #: no fetch before this time.monotonic() value (backoff after an error)
    retry_at: float = 0.0
    failures: int = 0
    #: bumped on every seek/reset: a fetch started before it is discarded
    generation: int = 0
    #: fetch at once, without waiting for the node's long poll (after a leader move)
    express: bool = False
    #: auto_offset_reset="none" left no position: every poll raises this until a seek
    error: Exception | None = None

    @property
    def has_valid_position(self) -> bool:
        return self.position is not None and self.reset_to is None


class SubscriptionType(enum.Enum):
    NONE = "none"
    AUTO_TOPICS = "topics"
    AUTO_PATTERN = "pattern"
    USER_ASSIGNED = "assigned"


class SubscriptionState:
    """Topics or pattern subscribed, partitions assigned, and per-partition positions."""

    def __init__(self, default_reset: ResetStrategy) -> None:
        self.default_reset = default_reset
        self.kind = SubscriptionType.NONE
        self.topics: frozenset[str] = frozenset()
        self.pattern: re.Pattern[str] | None = None
        self._assignment: dict[TopicPartition, PartitionState] = {}
        self._changed = anyio.Event()
        self.version = 0
        #: called synchronously after every change (the fetcher's wake-up)
        self.listeners: list[Callable[[], None]] = []
        #: topics the user looked offsets up for: the refresher keeps their metadata too
        self.extra_topics: set[str] = set()
        #: KIP-207: the largest end offset the user was shown per partition
        self.end_offset_floor: dict[TopicPartition, int] = {}

    # ------------------------------------------------------------- subscription
    def subscribe(self, topics: Iterable[str] = (), pattern: str | re.Pattern[str] | None = None) -> None:
        if self.kind == SubscriptionType.USER_ASSIGNED:
            raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
        if pattern is not None:
            self.kind = SubscriptionType.AUTO_PATTERN
            self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
            self.topics = frozenset()
        else:
            self.kind = SubscriptionType.AUTO_TOPICS
            self.pattern = None
            self.topics = frozenset(topics)
        self.notify()

    def match_pattern(self, available: Iterable[str]) -> bool:
        """For a pattern subscription: refresh the matched topics; True if they changed."""
        if self.pattern is None:
            return False
        matched = frozenset(t for t in available if self.wants(t))
        if matched == self.topics:
            return False
        self.topics = matched
        self.notify()
        return True

    def wants(self, topic: str) -> bool:
        """Whether a group may assign this topic's partitions to this member: a subscribed
        topic, or one the subscribed pattern matches (internal topics excepted)."""
        if self.pattern is not None:
            # re.match, as aiokafka (and Java's Pattern.matcher().matches() would be fullmatch):
            # "topic-" matches every topic that starts with it
            return bool(self.pattern.match(topic)) and not topic.startswith("__")
        return topic in self.topics

    def assign_from_user(self, partitions: Iterable[TopicPartition]) -> None:
        if self.kind in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN):
            raise IllegalStateError("assign() after subscribe(): call unsubscribe() first")
        self.kind = SubscriptionType.USER_ASSIGNED
        wanted = set(partitions)
        self.topics = frozenset(tp.topic for tp in wanted)
        self.set_assignment(wanted)

    def unsubscribe(self) -> None:
        self.kind = SubscriptionType.NONE
        self.topics = frozenset()
        self.pattern = None
        self.set_assignment(())

    # --------------------------------------------------------------- assignment
    def set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        """Keep state of partitions still assigned; new ones start without a position."""
        wanted = set(partitions)
        self._assignment = {tp: self._assignment.get(tp) or PartitionState() for tp in sorted(wanted)}
        self.notify()

    def add_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._assignment.setdefault(tp, PartitionState())
        self.notify()

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._assignment.pop(tp, None)
        self.notify()

    def assigned(self) -> set[TopicPartition]:
        return set(self._assignment)

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._assignment

    def state(self, tp: TopicPartition) -> PartitionState:
        try:
            return self._assignment[tp]
        except KeyError:
            raise IllegalStateError(f"partition {tp} is not assigned to this consumer") from None

    def get(self, tp: TopicPartition) -> PartitionState | None:
        return self._assignment.get(tp)

    def items(self) -> list[tuple[TopicPartition, PartitionState]]:
        return list(self._assignment.items())

    # ---------------------------------------------------------------- positions
    def seek(self, tp: TopicPartition, offset: int, epoch: int = -1, *, validated_epoch: int) -> None:
        """Set the position; a known epoch is validated when the store's leader epoch moves on."""
        st = self.state(tp)
        st.position = offset
        st.position_epoch = epoch
        st.reset_to = None
        st.validated_epoch = validated_epoch
        st.generation += 1
        st.retry_at = 0.0
        st.failures = 0
        st.error = None
        st.highwater = None
        self.end_offset_floor.pop(tp, None)
        self.notify()

    def request_reset(self, tp: TopicPartition, spec: int) -> None:
        st = self.state(tp)
        st.reset_to = spec
        st.generation += 1
        st.retry_at = 0.0
        st.error = None
        self.notify()

    def fail_partition(self, tp: TopicPartition, error: Exception) -> None:
        """No position without the user (auto_offset_reset="none"): polls raise ``error``
        until a seek or a reset request clears it; nothing is fetched meanwhile."""
        st = self._assignment.get(tp)
        if st is None:
            return
        st.error = error
        st.retry_at = math.inf
        self.notify()

    def partition_error(self, only: Iterable[TopicPartition] | None = None) -> Exception | None:
        """The first partition error a poll of ``only`` (None: every partition) must raise."""
        tps = self._assignment if only is None else only
        for tp in sorted(tps):
            st = self._assignment.get(tp)
            if st is not None and st.error is not None:
                return st.error
        return None

    def advance(self, tp: TopicPartition, offset: int, epoch: int) -> None:
        """Consumed up to ``offset`` (exclusive): no notification, this is the hot path."""
        st = self._assignment.get(tp)
        if st is not None:
            st.position = offset
            if epoch >= 0:
                st.position_epoch = epoch

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.state(tp).paused = True
        self.notify()

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.state(tp).paused = False
        self.notify()

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, st in self._assignment.items() if st.paused}

    # ------------------------------------------------------------- notification
    def notify(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = anyio.Event()
        for listener in list(self.listeners):
            listener()

    async def wait_for_change(self, since_version: int) -> None:
        while self.version == since_version:
            await self._changed.wait()

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        """Return once ``ready()`` holds, asking again after every change (it may raise)."""
        while True:
            version = self.version
            if ready():
                return
            await self.wait_for_change(version)
