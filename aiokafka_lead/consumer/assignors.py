"""Partition assignors for the classic group protocol: range, roundrobin, cooperative-sticky
(sticky: :mod:`.sticky_assignor`), and the adapter that runs aiokafka-style assignors.

The group leader runs one assignor over every member's subscription (decoded from the
JoinGroup metadata, ``ConsumerProtocolSubscription``) and the partition counts it knows.
Members are ordered by ``group_instance_id`` when both have one (static membership keeps
its slot across restarts), else by ``member_id``.

Cooperative-sticky (KIP-429): members send the partitions they own; the assignor keeps
each valid owned partition with its owner up to a balanced quota, spreads the rest, and
then withholds every partition that would move from one member to another. The old owner
revokes it and rejoins at once; the second rebalance hands it to the new owner. So no
partition is ever owned by two members, and unaffected partitions are never revoked.

aiokafka-style assignors (``coordinator.assignors.abstract.AbstractPartitionAssignor``
subclasses, or anything with ``name``, ``metadata()``, ``assign()`` and ``on_assignment()``)
run through :class:`AiokafkaAssignorAdapter`: their subscription user data, the leader's
``assign(cluster, members)`` in aiokafka's shapes, the assignment user data they return,
and ``on_assignment()`` on every member. kafka-python's assignor classes (which frameworks
pass on) are of this kind; their ``assign()`` reads a member's ``topics`` and
``group_instance_id``, which the members it is given have too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka_lead.consumer.assignor_base import (
    AbstractPartitionAssignor,
    Assignment,
    AssignmentCluster,
    MemberAssignment,
    MemberSubscription,
    PartitionAssignor,
    RebalanceProtocol,
)
from aiokafka_lead.consumer.member_protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka_lead.consumer.sticky_assignor import StickyPartitionAssignor
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)


def _ordered(members: Mapping[str, MemberSubscription]) -> list[MemberSubscription]:
    return sorted(members.values(), key=MemberSubscription.sort_key)


class _OrderedAssignor(PartitionAssignor):
    """An assignor that deals the partitions to the members in their order: every member
    gets a list, an empty one too."""

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Mapping[str, MemberSubscription]
    ) -> Assignment:
        out: Assignment = {m: [] for m in members}
        ordered = _ordered(members)
        if ordered:
            self._deal(partitions_per_topic, ordered, out)
        return out

    def _deal(self, counts: Mapping[str, int], ordered: list[MemberSubscription], out: Assignment) -> None:
        """Add to ``out`` what each of the ``ordered`` members gets ({topic: partitions} ``counts``)."""
        raise NotImplementedError


class RangePartitionAssignor(_OrderedAssignor):
    """Per topic: consecutive ranges of partitions, the first members getting one extra."""

    name = "range"
    rebalance_protocol = RebalanceProtocol.EAGER

    def _deal(self, counts: Mapping[str, int], ordered: list[MemberSubscription], out: Assignment) -> None:
        for topic in sorted(counts):
            count = counts[topic]
            subscribers = [m for m in ordered if topic in m.topics]
            if not subscribers or count <= 0:
                continue
            per, extra = divmod(count, len(subscribers))
            start = 0
            for i, member in enumerate(subscribers):
                n = per + (1 if i < extra else 0)
                out[member.member_id].extend(TopicPartition(topic, p) for p in range(start, start + n))
                start += n


class RoundRobinPartitionAssignor(_OrderedAssignor):
    """All partitions in (topic, partition) order, dealt to subscribed members in turn."""

    name = "roundrobin"
    rebalance_protocol = RebalanceProtocol.EAGER

    def _deal(self, counts: Mapping[str, int], ordered: list[MemberSubscription], out: Assignment) -> None:
        turn = 0
        for topic in sorted(counts):
            for p in range(counts[topic]):
                for _ in range(len(ordered)):
                    member = ordered[turn % len(ordered)]
                    turn += 1
                    if topic in member.topics:
                        out[member.member_id].append(TopicPartition(topic, p))
                        break


class CooperativeStickyAssignor(_OrderedAssignor):
    """Balanced, sticky and incremental (KIP-429 / KIP-341 semantics)."""

    name = "cooperative-sticky"
    rebalance_protocol = RebalanceProtocol.COOPERATIVE

    def _deal(self, counts: Mapping[str, int], ordered: list[MemberSubscription], out: Assignment) -> None:
        owners = _valid_owners(counts, ordered)
        everything = [TopicPartition(t, p) for t in sorted(counts) for p in range(counts[t])]
        eligible = [tp for tp in everything if any(tp.topic in m.topics for m in ordered)]
        min_quota, extra = divmod(len(eligible), len(ordered))
        # 1. keep owned partitions, at most the quota, fewest members above the minimum
        kept: dict[str, list[TopicPartition]] = {m.member_id: [] for m in ordered}
        for tp in eligible:
            owner = owners.get(tp)
            if owner is not None:
                kept[owner].append(tp)
        allowed_above = extra
        for member in sorted(ordered, key=lambda m: -len(kept[m.member_id])):
            mine = kept[member.member_id]
            cap = min_quota
            if len(mine) > min_quota and allowed_above > 0:
                cap = min_quota + 1
                allowed_above -= 1
            del mine[cap:]
        taken = {tp for mine in kept.values() for tp in mine}
        for member_id, mine in kept.items():
            out[member_id].extend(mine)
        # 2. spread the rest over the least loaded subscribed members
        for tp in eligible:
            if tp in taken:
                continue
            candidates = [m for m in ordered if tp.topic in m.topics]
            if not candidates:
                continue
            target = min(candidates, key=lambda m: (len(out[m.member_id]), m.sort_key()))
            out[target.member_id].append(tp)
        # 3. cooperative: nothing moves between two members in one round
        for member_id, assigned in out.items():
            out[member_id] = [tp for tp in assigned if owners.get(tp, member_id) == member_id]


def _valid_owners(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> dict[TopicPartition, str]:
    """Who owns each partition; on a double claim, the member of the newest generation wins."""
    owners: dict[TopicPartition, tuple[int, str]] = {}
    for m in members:
        for tp in m.owned_partitions:
            if tp.topic not in m.topics or not 0 <= tp.partition < partitions_per_topic.get(tp.topic, 0):
                continue
            claim = owners.get(tp)
            if claim is None or m.generation_id > claim[0]:
                owners[tp] = (m.generation_id, m.member_id)
    return {tp: member_id for tp, (_, member_id) in owners.items()}


class _MemberMetadata(ConsumerProtocolMemberMetadata):
    """A member as an aiokafka-style ``assign()`` sees it: aiokafka's ``subscription`` and
    ``user_data``, and kafka-python's ``topics`` and ``group_instance_id``."""

    __slots__ = ("group_instance_id",)

    def __init__(self, member: MemberSubscription) -> None:
        super().__init__(member.version, member.topics, member.user_data or b"")
        self.group_instance_id = member.group_instance_id

    @property
    def topics(self) -> list[str]:
        return self.subscription


class AiokafkaAssignorAdapter(PartitionAssignor):
    """Runs an aiokafka-style assignor (the class or an instance, called as given)."""

    rebalance_protocol = RebalanceProtocol.EAGER

    def __init__(self, assignor: Any) -> None:
        self.assignor = assignor
        self.name = str(assignor.name)
        self._user_data: dict[str, bytes] = {}

    def subscription_user_data(self, topics: Sequence[str]) -> bytes | None:
        meta = self.assignor.metadata(list(topics))
        if isinstance(meta, bytes | bytearray):
            meta = ConsumerProtocolMemberMetadata.decode(bytes(meta))
        return bytes(meta.user_data) if meta.user_data else None

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Mapping[str, MemberSubscription]
    ) -> Assignment:
        subscriptions = {member_id: _MemberMetadata(m) for member_id, m in members.items()}
        result = self.assignor.assign(AssignmentCluster(partitions_per_topic), subscriptions)
        if not isinstance(result, Mapping):
            raise TypeError(f"assignor {self.name!r}: assign() returned {type(result).__name__}, not a dict")
        out: Assignment = {member_id: [] for member_id in members}
        self._user_data = {}
        for member_id, value in result.items():
            given = value
            if isinstance(value, bytes | bytearray):
                given = ConsumerProtocolMemberAssignment.decode(bytes(value))
            if not callable(getattr(given, "partitions", None)):
                raise TypeError(
                    f"assignor {self.name!r}: the assignment of {member_id!r} is a {type(given).__name__}, "
                    "not a ConsumerProtocolMemberAssignment"
                )
            if member_id not in out:
                log.warning("assignor %r assigned partitions to %r: not a group member", self.name, member_id)
                continue
            out[member_id] = [TopicPartition(tp[0], tp[1]) for tp in given.partitions()]
            user_data = getattr(given, "user_data", None)
            if user_data:
                self._user_data[member_id] = bytes(user_data)
        return out

    def assignment_user_data(self, member_id: str) -> bytes | None:
        return self._user_data.get(member_id)

    def on_assignment(self, assignment: MemberAssignment, generation_id: int) -> None:
        by_topic: dict[str, list[int]] = {}
        for tp in assignment.partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        given = ConsumerProtocolMemberAssignment(
            assignment.version, by_topic.items(), assignment.user_data or b""
        )
        self.assignor.on_assignment(given)
        on_generation = getattr(self.assignor, "on_generation_assignment", None)
        if callable(on_generation):
            on_generation(generation_id)


def _aiokafka_style(strategy: object) -> bool:
    if isinstance(strategy, AbstractPartitionAssignor) or (
        isinstance(strategy, type) and issubclass(strategy, AbstractPartitionAssignor)
    ):
        return True
    return isinstance(getattr(strategy, "name", None), str) and all(
        callable(getattr(strategy, attr, None)) for attr in ("assign", "metadata", "on_assignment")
    )


#: the built-in assignors by name
BY_NAME: dict[str, type[PartitionAssignor]] = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def resolve_assignors(strategies: Sequence[object]) -> list[PartitionAssignor]:
    """Accept assignor instances, classes or names ("range", "roundrobin", "sticky",
    "cooperative-sticky"), and aiokafka-style assignors (classes or instances)."""
    known = BY_NAME
    out: list[PartitionAssignor] = []
    for s in strategies:
        if isinstance(s, PartitionAssignor):
            out.append(s)
        elif isinstance(s, type) and issubclass(s, PartitionAssignor):
            out.append(s())
        elif isinstance(s, str) and s in known:
            out.append(known[s]())
        elif _aiokafka_style(s):
            out.append(AiokafkaAssignorAdapter(s))
        else:
            raise ValueError(f"unknown partition assignment strategy {s!r}; known: {sorted(known)}")
    if not out:
        raise ValueError("partition_assignment_strategy is empty")
    return out


__all__ = [
    "BY_NAME",
    "AbstractPartitionAssignor",
    "AiokafkaAssignorAdapter",
    "Assignment",
    "AssignmentCluster",
    "CooperativeStickyAssignor",
    "MemberAssignment",
    "MemberSubscription",
    "PartitionAssignor",
    "RangePartitionAssignor",
    "RebalanceProtocol",
    "RoundRobinPartitionAssignor",
    "StickyPartitionAssignor",
    "resolve_assignors",
]
