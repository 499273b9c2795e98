"""The consumer's assignment: ``subscribe`` (topics or a pattern), ``assign``, what is assigned,
and pausing; without a group, a subscription means every partition of the matched topics."""

from __future__ import annotations

import re
from collections.abc import Iterable

from aiokafka_lead.config.arguments import check_topic, check_topic_partitions
from aiokafka_lead.consumer.consumer_base import ConsumerBase, only_topic_partitions
from aiokafka_lead.consumer.coordinator import ConsumerRebalanceListener
from aiokafka_lead.consumer.subscription import SubscriptionType
from aiokafka_lead.metadata import MetadataChange
from aiokafka_lead.structs import TopicPartition


class AssignmentAPI(ConsumerBase):
    """``subscribe``, ``assign``, ``assignment``, ``pause`` and their kin of AIOKafkaConsumer."""

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

    def paused(self) -> set[TopicPartition]:
        return self._subs.paused()

    def pause(self, *partitions: TopicPartition) -> None:
        only_topic_partitions(partitions)
        self._subs.pause(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        only_topic_partitions(partitions)
        self._subs.resume(partitions)

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


__all__ = ["AssignmentAPI"]
