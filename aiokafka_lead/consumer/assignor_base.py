"""aiokafka's assignor interface: subclass :class:`AbstractPartitionAssignor` and pass the
class (or an instance) in ``partition_assignment_strategy``.

The consumer runs such an assignor in the classic group protocol (eager rebalances):
``metadata(topics)`` gives this member's subscription, ``assign(cluster, members)`` runs
on the group leader, ``on_assignment(assignment)`` on every member after each rebalance
(and ``on_generation_assignment(generation)`` too, when the assignor has it).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping

from aiokafka_lead.consumer.member_protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)


class AssignmentCluster:
    """The ``cluster`` an assignor's ``assign()`` gets: the subscribed topics' partitions.

    Offers what aiokafka's assignors use of aiokafka's ``ClusterMetadata``:
    ``partitions_for_topic(topic)`` (a set of partition ids, None for an unknown topic)
    and ``topics()``: the topics the group's members subscribe to whose metadata is known.
    """

    def __init__(self, partitions_per_topic: Mapping[str, int]) -> None:
        self._counts = dict(partitions_per_topic)

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        return set(self._counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._counts.get(topic)
        return None if count is None else set(range(count))


class AbstractPartitionAssignor(abc.ABC):
    """aiokafka's base class of a client-side partition assignor (all methods class-level)."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The protocol name sent in JoinGroup; every member of a group must agree on it."""

    @classmethod
    @abc.abstractmethod
    def assign(
        cls, cluster: AssignmentCluster, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        """On the group leader: {member_id: assignment} for {member_id: subscription}."""

    @classmethod
    @abc.abstractmethod
    def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        """This member's subscription (topics and user data) for JoinGroup."""

    @classmethod
    @abc.abstractmethod
    def on_assignment(cls, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Called on every member with its assignment after each rebalance."""


__all__ = ["AbstractPartitionAssignor", "AssignmentCluster"]
