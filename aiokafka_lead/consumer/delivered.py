"""The group membership behind the records a consumer handed to the application (KIP-447).

A consume-transform-produce loop sends its offsets with ``consumer.group_metadata()`` so
that the group coordinator rejects them when the consumer lost its partitions since it read
the records. Java's consumer rebalances only inside ``poll()``, on the application's thread,
so the membership read before the commit is the one the records came with. This consumer
rebalances in the background: between ``getmany()`` and the commit a rebalance may take the
partitions away and give them back, with their positions reset to the committed offsets. A
commit sent with the new generation would then be accepted, and the same records read and
written again.

:class:`DeliveredMembership` notes, for every partition delivered, its assignment state (a
:class:`PartitionState` is replaced whenever the partition is assigned again) and the
membership at that moment. ``group_metadata()`` answers with the current membership while
every partition delivered since the last answer is still held under the same assignment, and
with the membership of the delivery otherwise: a stale generation, which the coordinator
rejects, so the transaction aborts instead of copying records twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from aiokafka_lead.consumer.subscription import PartitionState, SubscriptionState
from aiokafka_lead.structs import ConsumerGroupMetadata, TopicPartition


class DeliveredMembership:
    """What ``group_metadata()`` returns; fed by every delivery of records."""

    def __init__(self, subs: SubscriptionState, current: Callable[[], ConsumerGroupMetadata]) -> None:
        self._subs = subs
        self._current = current  # the membership now (generation -1 while not in the group)
        #: the last membership held in the group: sent instead of "no generation" mid-rebalance
        self._last_in_group: ConsumerGroupMetadata | None = None
        #: partition -> (its assignment state, the membership) when its records were delivered
        self._delivered: dict[TopicPartition, tuple[PartitionState, ConsumerGroupMetadata]] = {}
        #: group_metadata() was read since the last delivery: the next delivery starts afresh
        self._answered = False

    def _membership(self) -> ConsumerGroupMetadata:
        now = self._current()
        if now.generation_id >= 0:
            self._last_in_group = now
            return now
        return self._last_in_group or now

    def delivered(self, partitions: Iterable[TopicPartition]) -> None:
        """Records of ``partitions`` were returned to the application."""
        if self._answered:
            self._delivered.clear()
            self._answered = False
        membership = self._membership()
        for tp in partitions:
            state = self._subs.get(tp)
            if state is not None:
                self._delivered[tp] = (state, membership)

    def group_metadata(self) -> ConsumerGroupMetadata:
        self._answered = True
        for tp, (state, membership) in self._delivered.items():
            if self._subs.get(tp) is not state:  # reassigned (or taken away) since delivered
                return membership
        return self._membership()
