"""KIP-848 consumer-protocol group state on the fake coordinator (ConsumerGroupHeartbeat).

A deterministic model of the broker's side, enough for exact client tests:

* the target assignment comes from a sticky per-topic assignor: each member subscribed to
  a topic gets ``n // m`` of its partitions (the first ``n % m`` members in join order one
  more), keeps what it had up to that quota, and the rest go out in partition order to
  members in join order;
* a member is *given* a partition of its target only once no other member has it
  (neither in the assignment last sent to it nor among the partitions it reports owning),
  so a partition moves only after its previous owner revoked it and said so;
* a member's epoch becomes the group epoch whenever the assignment sent to it changes; a
  heartbeat at a higher epoch than the member's, or at a lower one that is not the
  previous epoch, is fenced (FENCED_MEMBER_EPOCH); commits check the epoch exactly
  (lower: STALE_MEMBER_EPOCH, higher: FENCED_MEMBER_EPOCH);
* a static member that leaves with epoch -2 keeps its assignment until a member with the
  same instance id joins (it takes the assignment over) or a test expires it.

Session timeouts are not enforced: ``expire_member`` is the test's way to make the
broker forget a member (its next heartbeat gets UNKNOWN_MEMBER_ID).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.testing.fake.epochs import MEMBER_EPOCH, epoch_error

TP = tuple[str, int]

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = "/127.0.0.1"
    epoch: int = 0
    previous_epoch: int = -1
    topic_names: tuple[str, ...] = ()
    topic_regex: str | None = None
    #: partitions the member says it owns (its last topic_partitions)
    owned: set[TP] = field(default_factory=set)
    #: the assignment last sent to it
    assigned: set[TP] = field(default_factory=set)
    #: left with epoch -2 (static): its partitions wait for its instance id to come back
    departed: bool = False


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    epoch: int = 0
    assignor: str = "uniform"
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, set[TP]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if all(m.assigned == self.target.get(m.member_id, set()) == m.owned for m in self.members.values()):
            return "Stable"
        return "Reconciling"

    def member_by_instance(self, instance_id: str) -> ConsumerMember | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def subscribed(self, member: ConsumerMember, topics: dict[str, int]) -> list[str]:
        if member.topic_regex is not None:
            pattern = re.compile(member.topic_regex)
            return sorted(t for t in topics if pattern.fullmatch(t))
        return sorted(t for t in member.topic_names if t in topics)

    def compute_target(self, topics: dict[str, int]) -> None:
        """Sticky per-topic quotas (see the module docstring); bumps the epoch on a change."""
        target: dict[str, set[TP]] = {mid: set() for mid in self.members}
        by_topic: dict[str, list[str]] = {}
        for mid, member in self.members.items():
            for t in self.subscribed(member, topics):
                by_topic.setdefault(t, []).append(mid)
        for topic in sorted(by_topic):
            members = by_topic[topic]
            n, m = topics[topic], len(members)
            quota = {mid: n // m + (1 if i < n % m else 0) for i, mid in enumerate(members)}
            taken: set[int] = set()
            for mid in members:
                kept = sorted(p for t, p in self.target.get(mid, set()) if t == topic and p < n)
                for p in kept[: quota[mid]]:
                    target[mid].add((topic, p))
                    taken.add(p)
            free = iter(p for p in range(n) if p not in taken)
            for mid in members:
                while sum(1 for t, _ in target[mid] if t == topic) < quota[mid]:
                    target[mid].add((topic, next(free)))
        if target != self.target:
            self.target = target
            self.epoch += 1

    def grantable(self, member: ConsumerMember) -> set[TP]:
        """The member's target minus what another member still has or still owns."""
        held: set[TP] = set()
        for other in self.members.values():
            if other is not member:
                held |= other.assigned | other.owned
        return self.target.get(member.member_id, set()) - held

    def epoch_error(self, member: ConsumerMember, epoch: int, owned: set[TP] | None) -> int:
        """Kafka's heartbeat epoch rule: the previous epoch is accepted only with a subset."""
        if epoch == member.epoch:
            return ErrorCode.NONE
        if epoch == member.previous_epoch and owned is not None and owned <= member.assigned:
            return ErrorCode.NONE
        return ErrorCode.FENCED_MEMBER_EPOCH

    def commit_error(self, member_id: str, epoch: int) -> int:
        member = self.members.get(member_id)
        if member is None or member.departed:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return epoch_error(epoch, member.epoch, MEMBER_EPOCH)

    def remove(self, member_id: str) -> bool:
        if self.members.pop(member_id, None) is None:
            return False
        self.target.pop(member_id, None)
        self.epoch += 1
        return True


__all__ = ["ConsumerGroup", "ConsumerMember"]
