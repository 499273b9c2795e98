"""The assignor interfaces: this client's :class:`PartitionAssignor` (with the member
subscriptions and assignments it works on), and aiokafka's: subclass
:class:`AbstractPartitionAssignor` and pass the class (or an instance) in
``partition_assignment_strategy``.

The consumer runs an aiokafka-style assignor in the classic group protocol (eager rebalances):
``metadata(topics)`` gives this member's subscription, ``assign(cluster, members)`` runs
on the group leader, ``on_assignment(assignment)`` on every member after each rebalance
(and ``on_generation_assignment(generation)`` too, when the assignor has it).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from aiokafka_lead.consumer.member_protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka_lead.structs import TopicPartition


class RebalanceProtocol(enum.Enum):
    EAGER = "eager"
    COOPERATIVE = "cooperative"


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """One member as the group leader sees it."""

    member_id: str
    topics: tuple[str, ...]
    group_instance_id: str | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    user_data: bytes | None = None
    #: the ConsumerProtocolSubscription version the member sent
    version: int = 0

    def sort_key(self) -> tuple[int, str]:
        if self.group_instance_id is not None:
            return (0, self.group_instance_id)
        return (1, self.member_id)


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """What SyncGroup gave this member: its partitions, the leader's user data, the version."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None
    version: int = 0


Assignment = dict[str, list[TopicPartition]]


class PartitionAssignor:
    """Base class: ``name`` goes on the wire; ``assign`` runs on the group leader only."""

    name: str = ""
    rebalance_protocol: RebalanceProtocol = RebalanceProtocol.EAGER

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Mapping[str, MemberSubscription]
    ) -> Assignment:
        raise NotImplementedError

    def user_data(self) -> bytes | None:
        """Extra bytes to put in this member's subscription (none by default)."""
        return None

    def subscription_user_data(self, topics: Sequence[str]) -> bytes | None:
        """The user data of this member's subscription to ``topics`` (default: :meth:`user_data`)."""
        return self.user_data()

    def assignment_user_data(self, member_id: str) -> bytes | None:
        """Leader: the user data to send with ``member_id``'s share of the last :meth:`assign`."""
        return None

    def on_assignment(self, assignment: MemberAssignment, generation_id: int) -> None:
        """Every member, after each SyncGroup of this protocol: what it was given."""


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


__all__ = [
    "AbstractPartitionAssignor",
    "Assignment",
    "AssignmentCluster",
    "MemberAssignment",
    "MemberSubscription",
    "PartitionAssignor",
    "RebalanceProtocol",
]
