"""Classic consumer-group state on the coordinator node (JoinGroup/SyncGroup protocol).

Enough of Kafka's GroupCoordinator for consumer tests: a join round completes when every
known member has rejoined, or when the rebalance timeout passes (then the missing
members are dropped). The first member to join becomes the leader and gets everyone's
metadata; SyncGroup hands out the leader's assignments. Session timeouts are not
enforced (the fake never evicts a silent member on its own), and there is no initial
rebalance delay, so a lone member completes its join at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from aiokafka_lead.mappings import get_or_add
from aiokafka_lead.testing.fake.consumer_groups import ConsumerGroup
from aiokafka_lead.testing.fake.core import ClusterCore

EMPTY, PREPARING, COMPLETING, STABLE = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable"


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    protocols: list[tuple[str, bytes]]
    rebalance_timeout_ms: int
    joined: bool = False
    assignment: bytes = b""


@dataclass(slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(slots=True)
class Group:
    group_id: str
    state: str = EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    #: member ids handed out with MEMBER_ID_REQUIRED, not yet joined
    pending: set[str] = field(default_factory=set)
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    join_done: anyio.Event | None = None
    sync_done: anyio.Event | None = None

    @property
    def rebalance_timeout_s(self) -> float:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0) / 1000

    def start_rebalance(self) -> None:
        """Everyone must rejoin; members blocked in SyncGroup are released (they will see 27)."""
        if self.state == PREPARING:
            return
        self.state = PREPARING
        for m in self.members.values():
            m.joined = False
        self.join_done = anyio.Event()
        if self.sync_done is not None:
            self.sync_done.set()

    def maybe_complete_join(self, *, force: bool = False) -> None:
        if self.state != PREPARING:
            return
        if not force and not all(m.joined for m in self.members.values()):
            return
        for member_id in [mid for mid, m in self.members.items() if not m.joined]:
            del self.members[member_id]
        done = self.join_done
        self.generation_id += 1
        if not self.members:
            self.state, self.leader_id, self.protocol_name = EMPTY, None, None
        else:
            if self.leader_id not in self.members:
                self.leader_id = next(iter(self.members))
            self.protocol_name = self._choose_protocol()
            self.state = COMPLETING
            for m in self.members.values():
                m.assignment = b""
            self.sync_done = anyio.Event()
        if done is not None:
            done.set()

    def _choose_protocol(self) -> str | None:
        """The leader's first protocol that every member supports."""
        assert self.leader_id is not None
        for name, _ in self.members[self.leader_id].protocols:
            if all(any(n == name for n, _ in m.protocols) for m in self.members.values()):
                return name
        return None

    def complete_sync(self, assignments: dict[str, bytes]) -> None:
        for member_id, data in assignments.items():
            if member_id in self.members:
                self.members[member_id].assignment = data
        self.state = STABLE
        if self.sync_done is not None:
            self.sync_done.set()

    def remove(self, member_id: str) -> bool:
        if self.members.pop(member_id, None) is None:
            return False
        if not self.members:
            self.state, self.leader_id = EMPTY, None
            self.generation_id += 1
            if self.join_done is not None:
                self.join_done.set()
        else:
            self.start_rebalance()
            self.maybe_complete_join()
        return True


class GroupCoordinator:
    """Every group of the cluster (each is answered only by its coordinator node)."""

    def __init__(self, cluster: ClusterCore) -> None:
        self._cluster = cluster
        self.groups: dict[str, Group] = {}
        #: KIP-848 groups (ConsumerGroupHeartbeat); their offsets live in ``groups`` too
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        #: what ConsumerGroupHeartbeat answers tell members (Kafka's default is 5000)
        self.consumer_heartbeat_interval_ms = 200

    def is_coordinator(self, node_id: int, group_id: str) -> bool:
        return self._cluster.coordinator_for(group_id, 0) == node_id

    def group(self, group_id: str) -> Group:
        return get_or_add(self.groups, group_id, Group)

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        return get_or_add(self.consumer_groups, group_id, ConsumerGroup)

    def expire_member(self, group_id: str, member_id: str) -> None:
        """What a session timeout does: the broker forgets the member (KIP-848 groups)."""
        if not self.consumer_groups[group_id].remove(member_id):
            raise KeyError(f"no member {member_id} in consumer group {group_id}")
