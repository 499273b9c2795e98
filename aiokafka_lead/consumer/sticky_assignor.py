"""The eager sticky assignor ("sticky", KIP-54; aiokafka's and Java's ``StickyAssignor``).

Balanced first, sticky second: the assignment is as balanced as the subscriptions allow
(no member could take a partition from a member holding two or more partitions more
than itself; with identical subscriptions the counts differ by at most one), and as many
partitions as possible stay with the member that had them.

Each member sends what it was given last and in which generation as its subscription's
user data, in Java's ``StickyAssignorUserData`` V1 layout (``[(topic, [partition])]``,
int32 generation), so Java and aiokafka members of the same group understand it. The
group leader:

1. takes every member's previous partitions (its user data, else the owned partitions
   and generation of its subscription); a partition claimed twice stays with the claim
   of the newer generation, the other claimant is remembered as its previous owner;
2. drops claims on partitions that are gone or no longer subscribed to by the claimant;
3. gives each unclaimed partition (those with the fewest eligible members first) to the
   eligible member holding the fewest;
4. while some member holds a partition that an eligible member with two or more fewer
   could take, moves one (back to its previous owner if that one qualifies, else the
   holder's newest). Each move lowers the sum of the squared counts, so this ends, and
   when it ends no such pair is left.

Like aiokafka's, it revokes everything before each rebalance (eager); for incremental
rebalances use ``CooperativeStickyAssignor``.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from aiokafka_lead.consumer.assignor_base import (
    Assignment,
    MemberAssignment,
    MemberSubscription,
    PartitionAssignor,
    RebalanceProtocol,
)
from aiokafka_lead.consumer.member_protocol import ConsumerProtocolMemberMetadata
from aiokafka_lead.errors import DecodeError
from aiokafka_lead.protocol.primitives import (
    I32,
    as_view,
    read_array_len,
    read_fixed_array,
    read_string,
    write_string,
)
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)


class ConsumerGenerationPair(NamedTuple):
    """A member that held a partition, and the generation in which it held it."""

    consumer: str
    generation: int


class StickyAssignorMemberMetadataV1(NamedTuple):
    """A member as the sticky assignor sees it: subscription, previous partitions, generation."""

    subscription: list[str]
    partitions: list[TopicPartition]
    generation: int


class StickyAssignorUserDataV1:
    """The sticky assignor's user data: the previous assignment and its generation."""

    class PreviousAssignment(NamedTuple):
        topic: str
        partitions: list[int]

    def __init__(self, previous_assignment: Iterable[tuple[str, Iterable[int]]], generation: int) -> None:
        self.previous_assignment = [self.PreviousAssignment(t, list(ps)) for t, ps in previous_assignment]
        self.generation = generation

    def encode(self) -> bytes:
        parts: list[bytes | bytearray | memoryview] = [I32.pack(len(self.previous_assignment))]
        for topic, partitions in self.previous_assignment:
            write_string(parts.append, topic)
            parts.append(struct.pack(f">i{len(partitions)}i", len(partitions), *partitions))
        parts.append(I32.pack(self.generation))
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> StickyAssignorUserDataV1:
        """Decode V1 (V0, without the generation, reads as generation -1); DecodeError if malformed."""
        buf = as_view(data)
        try:
            count, pos = read_array_len(buf, 0)
            previous: list[tuple[str, list[int]]] = []
            for _ in range(max(count, 0)):
                topic, pos = read_string(buf, pos)
                n, pos = read_array_len(buf, pos)
                partitions, pos = read_fixed_array(buf, pos, max(n, 0), "i", 4)
                previous.append((topic, partitions))
            generation = -1
            if pos < len(buf):
                (generation,) = I32.unpack_from(buf, pos)
                pos += 4
        except (IndexError, struct.error) as exc:
            raise DecodeError(f"sticky assignor user data: truncated ({exc})") from None
        if pos != len(buf):
            raise DecodeError(f"sticky assignor user data: {len(buf) - pos} bytes left over")
        return cls(previous, generation)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StickyAssignorUserDataV1):
            return NotImplemented
        return (self.previous_assignment, self.generation) == (other.previous_assignment, other.generation)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"StickyAssignorUserDataV1(previous_assignment={self.previous_assignment!r}, "
            f"generation={self.generation})"
        )


def _member_metadata(
    topics: Sequence[str], user_data: bytes | None, owned: Sequence[TopicPartition], generation: int
) -> StickyAssignorMemberMetadataV1:
    if not user_data:
        return StickyAssignorMemberMetadataV1(list(topics), list(owned), generation if owned else -1)
    try:
        decoded = StickyAssignorUserDataV1.decode(user_data)
    except DecodeError as exc:
        log.warning("sticky assignor: ignoring a member's unreadable previous assignment: %s", exc)
        return StickyAssignorMemberMetadataV1(list(topics), [], -1)
    partitions = [TopicPartition(t, p) for t, ps in decoded.previous_assignment for p in ps]
    return StickyAssignorMemberMetadataV1(list(topics), partitions, decoded.generation)


class StickyPartitionAssignor(PartitionAssignor):
    """Balanced and sticky across rebalances (eager); see the module docstring."""

    DEFAULT_GENERATION_ID = -1
    name = "sticky"
    version = 0
    rebalance_protocol = RebalanceProtocol.EAGER

    def __init__(self) -> None:
        #: what this member was given last (None before its first assignment)
        self.member_assignment: list[TopicPartition] | None = None
        self.generation = self.DEFAULT_GENERATION_ID

    @classmethod
    def parse_member_metadata(
        cls, metadata: ConsumerProtocolMemberMetadata
    ) -> StickyAssignorMemberMetadataV1:
        """A subscription's previous assignment and generation, read from its user data."""
        return _member_metadata(metadata.subscription, metadata.user_data, (), cls.DEFAULT_GENERATION_ID)

    def user_data(self) -> bytes | None:
        if self.member_assignment is None:
            return None
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(self.member_assignment):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return StickyAssignorUserDataV1(by_topic.items(), self.generation).encode()

    def on_assignment(self, assignment: MemberAssignment, generation_id: int) -> None:
        self.member_assignment = list(assignment.partitions)
        self.generation = generation_id

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Mapping[str, MemberSubscription]
    ) -> Assignment:
        ranked = sorted(members.values(), key=MemberSubscription.sort_key)
        order = {m.member_id: i for i, m in enumerate(ranked)}
        subscribers: dict[str, list[str]] = {}
        for member_id in sorted(members, key=order.__getitem__):
            for topic in members[member_id].topics:
                if partitions_per_topic.get(topic, 0) > 0:
                    subscribers.setdefault(topic, []).append(member_id)
        current, previous_owner = _claims(partitions_per_topic, members)
        _assign_unclaimed(partitions_per_topic, subscribers, current, order)
        _balance(subscribers, current, previous_owner, order)
        return {member_id: sorted(tps) for member_id, tps in current.items()}


def _claims(
    partitions_per_topic: Mapping[str, int], members: Mapping[str, MemberSubscription]
) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, ConsumerGenerationPair]]:
    """Steps 1-2: each member's valid previous partitions; the older claimant of a double claim."""
    claims: dict[TopicPartition, list[ConsumerGenerationPair]] = {}
    for member_id in sorted(members):
        m = members[member_id]
        meta = _member_metadata(m.topics, m.user_data, m.owned_partitions, m.generation_id)
        for tp in meta.partitions:
            if tp.topic in m.topics and 0 <= tp.partition < partitions_per_topic.get(tp.topic, 0):
                claims.setdefault(tp, []).append(ConsumerGenerationPair(member_id, meta.generation))
    current: dict[str, list[TopicPartition]] = {member_id: [] for member_id in members}
    previous_owner: dict[TopicPartition, ConsumerGenerationPair] = {}
    for tp in sorted(claims):
        by_generation = sorted(claims[tp], key=lambda c: -c.generation)
        if len(by_generation) > 1 and by_generation[0].generation == by_generation[1].generation:
            log.warning(
                "sticky assignor: %s claimed by several members in generation %d",
                tp,
                by_generation[0].generation,
            )
        current[by_generation[0].consumer].append(tp)
        if len(by_generation) > 1:
            previous_owner[tp] = by_generation[1]
    return current, previous_owner


def _assign_unclaimed(
    partitions_per_topic: Mapping[str, int],
    subscribers: Mapping[str, list[str]],
    current: dict[str, list[TopicPartition]],
    order: Mapping[str, int],
) -> None:
    """Step 3: unclaimed partitions, the most constrained first, to the least loaded eligible member."""
    taken = {tp for tps in current.values() for tp in tps}
    free = [
        TopicPartition(topic, p)
        for topic in sorted(subscribers)
        for p in range(partitions_per_topic[topic])
        if TopicPartition(topic, p) not in taken
    ]
    free.sort(key=lambda tp: (len(subscribers[tp.topic]), tp))
    for tp in free:
        target = min(subscribers[tp.topic], key=lambda m: (len(current[m]), order[m]))
        current[target].append(tp)


def _balance(
    subscribers: Mapping[str, list[str]],
    current: dict[str, list[TopicPartition]],
    previous_owner: Mapping[TopicPartition, ConsumerGenerationPair],
    order: Mapping[str, int],
) -> None:
    """Step 4: move single partitions from a member to an eligible one with two or more fewer."""
    while True:
        for giver in sorted(current, key=lambda m: (-len(current[m]), order[m])):
            held = len(current[giver])
            move = None
            for topic in sorted({tp.topic for tp in current[giver]}):
                taker = min(subscribers[topic], key=lambda m: (len(current[m]), order[m]))
                if len(current[taker]) + 1 < held:
                    move = (taker, _pick(current[giver], topic, taker, previous_owner))
                    break
            if move is not None:
                taker, tp = move
                current[giver].remove(tp)
                current[taker].append(tp)
                break
        else:
            return


def _pick(
    held: list[TopicPartition],
    topic: str,
    taker: str,
    previous_owner: Mapping[TopicPartition, ConsumerGenerationPair],
) -> TopicPartition:
    """Which partition of ``topic`` moves: back to its previous owner, else the holder's
    newest (unclaimed partitions were appended after its own claims)."""
    candidates = [tp for tp in held if tp.topic == topic]
    for tp in candidates:
        owner = previous_owner.get(tp)
        if owner is not None and owner.consumer == taker:
            return tp
    return candidates[-1]


__all__ = [
    "ConsumerGenerationPair",
    "StickyAssignorMemberMetadataV1",
    "StickyAssignorUserDataV1",
    "StickyPartitionAssignor",
]
