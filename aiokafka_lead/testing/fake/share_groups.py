"""Share groups (KIP-932) on the fake cluster: membership, record states, share sessions.

A deterministic model of the broker's side, for exact client tests:

* assignment: every member gets every partition of the topics it subscribes to (Kafka's
  simple assignor shares partitions among members too), unless a test pins a member to
  some partitions (:meth:`ShareCoordinator.pin`); a member's epoch is the group epoch of
  its last join or assignment change;
* records of a share partition are AVAILABLE, ACQUIRED (by a member, until a lock
  deadline), ACKNOWLEDGED or ARCHIVED; the start offset moves past the done ones;
* a lock expires when its deadline passes (``lock_ms``, checked at every request) or when
  the test calls :meth:`ShareCoordinator.expire_locks`; a record released or expired at
  ``delivery_limit`` deliveries is archived;
* share sessions are kept per (node, group, member) with their epoch; a test can drop
  them all (:meth:`ShareCoordinator.drop_sessions`), as a broker restart does.

Session timeouts are not enforced: ``expire_member`` makes the coordinator forget a member
(its next heartbeat gets UNKNOWN_MEMBER_ID).
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

from aiokafka_lead.testing.fake.core import TP, ClusterCore


class State(enum.Enum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@dataclass(slots=True)
class RecordState:
    state: State = State.AVAILABLE
    delivery_count: int = 0
    owner: str | None = None
    deadline: float = 0.0


@dataclass(slots=True)
class ShareMember:
    member_id: str
    client_id: str = ""
    epoch: int = 0
    topics: tuple[str, ...] = ()
    #: the assignment last sent to it
    sent: frozenset[TP] | None = None


@dataclass(slots=True)
class SharePartition:
    start_offset: int
    records: dict[int, RecordState] = field(default_factory=dict)


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    auto_offset_reset: str = "latest"
    lock_ms: int = 30_000
    delivery_limit: int = 5
    partitions: dict[TP, SharePartition] = field(default_factory=dict)


@dataclass(slots=True)
class ShareSessionState:
    epoch: int
    partitions: set[TP] = field(default_factory=set)


class ShareCoordinator:
    """Every share group of the fake cluster, and the brokers' share sessions."""

    def __init__(self, cluster: ClusterCore) -> None:
        self._cluster = cluster
        self.groups: dict[str, ShareGroup] = {}
        self.sessions: dict[tuple[int, str, str], ShareSessionState] = {}
        #: what ShareGroupHeartbeat answers tell members (Kafka's default is 5000)
        self.heartbeat_interval_ms = 200
        #: (group, member) -> the partitions the test pinned it to (instead of everything)
        self.pinned: dict[tuple[str, str], frozenset[TP]] = {}

    def group(self, group_id: str) -> ShareGroup:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = ShareGroup(group_id)
        return g

    def configure(
        self,
        group_id: str,
        *,
        auto_offset_reset: str | None = None,
        lock_ms: int | None = None,
        delivery_limit: int | None = None,
    ) -> ShareGroup:
        """The group configs ``share.auto.offset.reset``, ``share.record.lock.duration.ms``,
        ``share.delivery.count.limit``."""
        g = self.group(group_id)
        if auto_offset_reset is not None:
            g.auto_offset_reset = auto_offset_reset
        if lock_ms is not None:
            g.lock_ms = lock_ms
        if delivery_limit is not None:
            g.delivery_limit = delivery_limit
        return g

    def pin(self, group_id: str, member_id: str, partitions: set[TP]) -> None:
        """Assign ``member_id`` exactly ``partitions`` from its next heartbeat on."""
        self.pinned[(group_id, member_id)] = frozenset(partitions)

    def assignment(self, group: ShareGroup, member: ShareMember) -> frozenset[TP]:
        pinned = self.pinned.get((group.group_id, member.member_id))
        if pinned is not None:
            return pinned
        out: set[TP] = set()
        for topic in member.topics:
            t = self._cluster.topics.get(topic)
            if t is not None:
                out.update((topic, i) for i in range(len(t.partitions)))
        return frozenset(out)

    def expire_member(self, group_id: str, member_id: str) -> None:
        """What a session timeout does: the coordinator forgets the member."""
        group = self.groups[group_id]
        if group.members.pop(member_id, None) is None:
            raise KeyError(f"no member {member_id} in share group {group_id}")
        group.epoch += 1
        self.release_member(group, member_id)

    def drop_sessions(self) -> None:
        """Every broker forgets its share sessions (as after a restart)."""
        self.sessions.clear()

    def release_member(self, group: ShareGroup, member_id: str) -> None:
        for sp in group.partitions.values():
            for rs in sp.records.values():
                if rs.state is State.ACQUIRED and rs.owner == member_id:
                    self._give_back(group, rs)

    def expire_locks(self, group_id: str) -> None:
        """Every acquisition lock of the group expires now."""
        group = self.groups[group_id]
        for sp in group.partitions.values():
            for rs in sp.records.values():
                if rs.state is State.ACQUIRED:
                    self._give_back(group, rs)
        self._cluster.notify()

    def expire_due(self, group: ShareGroup) -> float | None:
        """Expire the locks past their deadline; the next deadline, if any."""
        now = time.monotonic()
        nearest = None
        for sp in group.partitions.values():
            for rs in sp.records.values():
                if rs.state is State.ACQUIRED:
                    if rs.deadline <= now:
                        self._give_back(group, rs)
                    else:
                        nearest = rs.deadline if nearest is None else min(nearest, rs.deadline)
        return nearest

    def _give_back(self, group: ShareGroup, rs: RecordState) -> None:
        rs.owner = None
        rs.state = State.ARCHIVED if rs.delivery_count >= group.delivery_limit else State.AVAILABLE

    def state_of(self, group_id: str, tp: TP, offset: int) -> RecordState | None:
        sp = self.groups[group_id].partitions.get(tp)
        return None if sp is None else sp.records.get(offset)

    # ------------------------------------------------------------------ records
    def partition_state(self, group: ShareGroup, tp: TP) -> SharePartition:
        sp = group.partitions.get(tp)
        if sp is None:
            part = self._cluster.partition(tp)
            start = part.log_start_offset if group.auto_offset_reset == "earliest" else part.high_watermark
            sp = group.partitions[tp] = SharePartition(start)
        return sp

    def acquire(
        self, group: ShareGroup, tp: TP, member_id: str, max_records: int, *, strict: bool
    ) -> list[tuple[int, int, int]]:
        """Acquire available records for ``member_id``: (first, last, delivery count) ranges.

        Batch-optimized (``strict`` false) takes whole stored batches once it starts one."""
        sp = self.partition_state(group, tp)
        part = self._cluster.partition(tp)
        deadline = time.monotonic() + group.lock_ms / 1000
        taken: list[int] = []
        for stored in part.batches:
            if stored.last_offset < sp.start_offset:
                continue
            started = False
            for offset in range(max(stored.base_offset, sp.start_offset), stored.last_offset + 1):
                if len(taken) >= max_records and (strict or not started):
                    break
                rs = sp.records.setdefault(offset, RecordState())
                if rs.state is not State.AVAILABLE:
                    continue
                rs.state, rs.owner, rs.deadline = State.ACQUIRED, member_id, deadline
                rs.delivery_count += 1
                taken.append(offset)
                started = True
            if len(taken) >= max_records:
                break
        ranges: list[tuple[int, int, int]] = []
        for offset in taken:
            count = sp.records[offset].delivery_count
            if ranges and ranges[-1][1] == offset - 1 and ranges[-1][2] == count:
                ranges[-1] = (ranges[-1][0], offset, count)
            else:
                ranges.append((offset, offset, count))
        return ranges

    def acknowledge(self, group: ShareGroup, tp: TP, member_id: str, offsets: dict[int, int]) -> bool:
        """Apply acknowledgements (wire types); False if any record at or above the start
        offset is not ACQUIRED by the member (INVALID_RECORD_STATE: nothing of the partition
        is applied)."""
        sp = group.partitions.get(tp)
        if sp is None:
            return False
        # as a Kafka broker: offsets below the start offset are done, their acknowledgements ignored
        offsets = {o: k for o, k in offsets.items() if o >= sp.start_offset}
        for offset in offsets:
            rs = sp.records.get(offset)
            if rs is None or rs.state is not State.ACQUIRED or rs.owner != member_id:
                return False
        deadline = time.monotonic() + group.lock_ms / 1000
        for offset, kind in offsets.items():
            rs = sp.records[offset]
            if kind in (0, 1):  # GAP, ACCEPT
                rs.state, rs.owner = State.ACKNOWLEDGED, None
            elif kind == 2:  # RELEASE
                self._give_back(group, rs)
            elif kind == 3:  # REJECT
                rs.state, rs.owner = State.ARCHIVED, None
            elif kind == 4:  # RENEW
                rs.deadline = deadline
        while sp.records.get(sp.start_offset) is not None and sp.records[sp.start_offset].state in (
            State.ACKNOWLEDGED,
            State.ARCHIVED,
        ):
            del sp.records[sp.start_offset]
            sp.start_offset += 1
        self._cluster.notify()
        return True


__all__ = [
    "RecordState",
    "ShareCoordinator",
    "ShareGroup",
    "ShareMember",
    "ShareSessionState",
    "State",
]
