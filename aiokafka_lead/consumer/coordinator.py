"""The classic consumer-group protocol: join, sync, heartbeat, leave.

One background task (:meth:`GroupCoordinator.run`, in the client's task group) owns the
membership: it finds the coordinator, joins (JoinGroup, then SyncGroup; the leader runs
the assignor), hands the assignment to the SubscriptionState, heartbeats while stable
and rejoins when the broker, the subscription or the topic metadata asks for it.

Coordinator moves are followed at once (``group_common.CoordinatorLink``); commits go
through ``commits.OffsetCommitter``, shared with the KIP-848 member.

Eager assignors revoke every partition before joining; cooperative-sticky (KIP-429) only
revokes the partitions taken away and rejoins at once so they can move. Static members
(KIP-345, ``group_instance_id``) do not send LeaveGroup on close: a restart within the
session timeout gets the same assignment without a rebalance.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable, Sequence
from typing import Any, ClassVar

import anyio
import anyio.abc

from aiokafka_lead.consumer.assignors import (
    MemberAssignment,
    MemberSubscription,
    PartitionAssignor,
    RangePartitionAssignor,
    RebalanceProtocol,
    resolve_assignors,
)
from aiokafka_lead.consumer.commits import CommitIdentity
from aiokafka_lead.consumer.errors import CommitFailedError
from aiokafka_lead.consumer.group_common import (
    COORDINATOR_MOVED,
    ConsumerRebalanceListener,
    GroupMember,
    call_listener,
)
from aiokafka_lead.consumer.member_base import GroupMemberBase, Loop
from aiokafka_lead.consumer.subscription import SubscriptionState, SubscriptionType
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import (
    DecodeError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    error_for_code,
)
from aiokafka_lead.protocol.messages import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)

#: consecutive failed joins, and heartbeats, after which an operator is warned
WARN_AFTER_JOINS = 2
WARN_AFTER_HEARTBEATS = 3

#: JoinGroup/SyncGroup answers that mean "join again now" (handled here, never raised)
REJOIN_AT_ONCE = frozenset({
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.REBALANCE_IN_PROGRESS,
})
GROUP_RETRIABLE = REJOIN_AT_ONCE | COORDINATOR_MOVED | {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
MEMBERSHIP_LOST = frozenset({
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.FENCED_INSTANCE_ID,
})
LEAVE_GROUP_BATCH_VERSION = 3  # KIP-345: members[] instead of member_id
SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3


class GroupCoordinator(GroupMemberBase):
    """Membership of one consumer in one classic group."""

    _log = log
    #: the member retries joins for ever, as aiokafka's
    _RETRIED: ClassVar[dict[str, tuple[str, int]]] = {"join": ("joining keeps failing", WARN_AFTER_JOINS)}

    def _init_protocol(self) -> None:
        config = self._config
        strategy = config.partition_assignment_strategy or (RangePartitionAssignor,)
        self._assignors: list[PartitionAssignor] = resolve_assignors(strategy)
        self.member_id = ""
        self.generation_id = -1
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self._need_rejoin = True
        self._stable = False
        self._wake = anyio.Event()
        self._joined_topics: dict[str, int] = {}
        self.rebalances = 0
        self.stable_event = anyio.Event()
        self._pending_lost: set[TopicPartition] = set()
        self._revoked_for_join = False  # the listener heard of this join's revocation

    # ------------------------------------------------------------------ state
    @property
    def protocol(self) -> RebalanceProtocol:
        if self.protocol_name is not None:
            for a in self._assignors:
                if a.name == self.protocol_name:
                    return a.rebalance_protocol
        return self._assignors[0].rebalance_protocol

    @property
    def _join_timeout_ms(self) -> int:
        """How long a JoinGroup or SyncGroup may wait: the rebalance, then the request."""
        return self._config.rebalance_timeout + self._config.request_timeout_ms

    @property
    def in_group(self) -> bool:
        return self.generation_id >= 0 and bool(self.member_id)

    def request_rejoin(self, reason: str) -> None:
        if not self._need_rejoin:
            log.info("group %s: rejoin requested: %s", self.group_id, reason)
        self._need_rejoin = True
        self._stable = False
        self._wake.set()

    def on_metadata_change(self) -> None:
        """Rejoin when a pattern matches new topics or a subscribed topic's partitions changed."""
        if self._subs.kind not in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN):
            return
        if self._subs.kind == SubscriptionType.AUTO_PATTERN:
            self._subs.match_pattern(self._core.store.topics())
        if not self.in_group:
            self._wake.set()
            return
        now = self._partition_counts(self._subs.topics | self.group_topics)
        if now != self._joined_topics:
            self.request_rejoin(f"subscribed topics changed: {sorted(set(now) ^ set(self._joined_topics))}")

    def _partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        out = {}
        for t in topics:
            parts = self._core.store.partitions_for_topic(t)
            if parts:
                out[t] = len(parts)
        return out

    # ------------------------------------------------------------ coordinator
    def _coordinator_dead(self, reason: str) -> None:
        self._link.forget(reason)

    async def _send(self, request: Any, *, timeout_ms: float | None = None) -> Any:
        return await self._link.send(request, timeout_ms=timeout_ms)

    # ------------------------------------------------------------------- loop
    def _loops(self) -> tuple[Loop, Loop]:
        return self._heartbeat_loop, self._join_loop

    async def _join_loop(self) -> None:
        """(Re)join whenever the member should be in the group and is not."""
        failures = 0
        while True:
            if not (self._wants_membership() and self._need_rejoin):
                self._wake = anyio.Event()
                if not (self._wants_membership() and self._need_rejoin):
                    await self._wake.wait()
                continue
            try:
                await self._join_and_sync()
                failures = self._recovered("join")
            except KafkaError as exc:
                # any failed join or sync (a lost, cut or undecodable answer too) is joined again
                self._need_rejoin = True
                code = getattr(exc, "errno", None)
                if (code in REJOIN_AT_ONCE and failures < 5) or (
                    code in COORDINATOR_MOVED and failures == 0
                ):
                    delay = 0.0  # the protocol's own answer: rejoin (or re-find) right away
                else:
                    if not exc.retriable and code not in GROUP_RETRIABLE:
                        self._report_error(exc)
                    delay = self._backoff.delay_s(failures)
                failures = self._retrying("join", exc, delay, failures)
                await anyio.sleep(delay)

    def _wants_membership(self) -> bool:
        return self._subs.kind in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)

    def _subscription_bytes(self, assignor: PartitionAssignor) -> bytes:
        owned: dict[str, list[int]] = {}
        if assignor.rebalance_protocol == RebalanceProtocol.COOPERATIVE:
            for tp in sorted(self._subs.assigned()):
                owned.setdefault(tp.topic, []).append(tp.partition)
        topics = sorted(self._subs.topics)
        return ConsumerProtocolSubscription(
            topics=topics,
            user_data=assignor.subscription_user_data(topics),
            owned_partitions=[
                ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps) for t, ps in owned.items()
            ],
            generation_id=self.generation_id,
            rack_id=self._config.client_rack,
        ).encode_with_version(SUBSCRIPTION_VERSION)

    async def _join_and_sync(self) -> None:
        self.stats.rebalance_started()
        if self._subs.kind == SubscriptionType.AUTO_PATTERN:
            self._subs.match_pattern(self._core.store.topics())
        elif any(self._core.store.partitions_for_topic(t) is None for t in self._subs.topics):
            # join knowing the partition counts, or the first metadata answer forces a rejoin
            try:
                wait_ms = min(self._config.request_timeout_ms, 2000)
                await self._core.wait_for_topics(self._subs.topics, wait_ms)
            except KafkaTimeoutError:
                log.info(
                    "group %s: joining before metadata for %s arrived",
                    self.group_id,
                    sorted(self._subs.topics),
                )
        if self.protocol == RebalanceProtocol.EAGER and not self._revoked_for_join:
            # aiokafka calls on_partitions_revoked before every join, with set() before the first
            await self._revoke(self._subs.assigned(), commit=True)
            self._revoked_for_join = True
        self._stable = False
        self.stable_event = anyio.Event() if self.stable_event.is_set() else self.stable_event
        self._joined_topics = self._partition_counts(self._subs.topics)
        join = JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=self._config.session_timeout,
            rebalance_timeout_ms=self._config.rebalance_timeout,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name=a.name, metadata=self._subscription_bytes(a))
                for a in self._assignors
            ],
            reason="joining" if self.generation_id < 0 else "rejoining",
        )
        self._need_rejoin = False
        response = await self._send(join, timeout_ms=self._join_timeout_ms)
        code = response.error_code
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self._need_rejoin = True
            return
        if code:
            self._need_rejoin = True
            self._join_error(code, "JoinGroup")
        self._check_join(response)
        self.generation_id = response.generation_id
        self.member_id = response.member_id
        self.protocol_name = response.protocol_name
        self.leader_id = response.leader
        assignments: list[SyncGroupRequest.SyncGroupRequestAssignment] = []
        if response.leader == response.member_id and not response.skip_assignment:
            assignments = await self._lead(response.protocol_name, response.members)
        sync = SyncGroupRequest(
            group_id=self.group_id,
            generation_id=self.generation_id,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type="consumer",
            protocol_name=self.protocol_name,
            assignments=assignments,
        )
        response = await self._send(sync, timeout_ms=self._join_timeout_ms)
        if response.error_code:
            self._need_rejoin = True
            self._join_error(response.error_code, "SyncGroup")
        given = self._assignment_given(response.assignment, assignments)
        assigned = self._subscribed_only(given.partitions)
        self.rebalances += 1
        for assignor in self._assignors:
            if assignor.name == self.protocol_name:
                assignor.on_assignment(given, self.generation_id)
        await self._on_assignment(assigned)

    def _check_join(self, response: Any) -> None:
        """A successful JoinGroup answer names this member; the leader alone gets the members,
        itself among them, and only a static leader may be told to skip the assignment (KIP-814).
        (The leader may be empty: a consumer group answers its classic members so, KIP-848.)"""
        problem = None
        leads = response.leader == response.member_id
        if not response.member_id:
            problem = "field 'member_id' is empty"
        elif response.skip_assignment and self.group_instance_id is None:
            problem = "field 'skip_assignment' is set for a member that is not static"
        elif leads and not response.skip_assignment:
            if all(m.member_id != response.member_id for m in response.members):
                problem = f"field 'members' ({len(response.members)}) leaves out the leader, this member"
        elif not leads and response.members:
            problem = (
                f"field 'members' lists {len(response.members)} member(s) to a member that is not the leader"
            )
        if problem is not None:
            raise KafkaProtocolError(
                f"JoinGroup for group {self.group_id} from node {self._link.node_id}: {problem}"
            )

    def _assignment_given(
        self, data: bytes, sent: Sequence[SyncGroupRequest.SyncGroupRequestAssignment]
    ) -> MemberAssignment:
        """This member's assignment from a SyncGroup answer, checked: it must decode and, when
        this member is the leader, be what it sent for itself (Kafka hands that back as it is)."""
        where = f"SyncGroup for group {self.group_id} from node {self._link.node_id}"
        own = next((bytes(a.assignment) for a in sent if a.member_id == self.member_id), None)
        if own is not None and bytes(data) != own:
            raise KafkaProtocolError(
                f"{where}: field 'assignment' ({len(data)} bytes) is not the assignment this "
                f"member, the group's leader, sent for itself ({len(own)} bytes)"
            )
        if not data:
            return MemberAssignment(())
        try:
            version, decoded = ConsumerProtocolAssignment.decode_with_version(data)
        except DecodeError as exc:
            raise KafkaProtocolError(f"{where}: field 'assignment' does not decode: {exc}") from exc
        partitions = tuple(
            TopicPartition(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions
        )
        return MemberAssignment(partitions, decoded.user_data, version)

    def _subscribed_only(self, partitions: Sequence[TopicPartition]) -> set[TopicPartition]:
        """The assigned partitions of topics this member subscribed to. A leader's plan names
        only topics its member subscribed to, so others (a subscription changed since the
        join, or a lying leader or broker) are refused with a warning and never fetched; a
        changed subscription has asked for a rejoin already."""
        foreign = sorted({tp for tp in partitions if not self._subs.wants(tp.topic)})
        if foreign:
            self._warn.warning(
                "foreign assignment",
                "group %s gen %d: SyncGroup from node %s assigns %d partition(s) of topics outside "
                "this member's subscription (%s); refused, not fetched",
                self.group_id, self.generation_id, self._link.node_id, len(foreign),
                ", ".join(f"{tp.topic}-{tp.partition}" for tp in foreign[:10]),
            )  # fmt: skip
        return set(partitions).difference(foreign)

    def _join_error(self, code: int, what: str) -> None:
        err = error_for_code(code, f"{what} for group {self.group_id} from node {self._link.node_id}")
        if code in COORDINATOR_MOVED:
            self._coordinator_dead(f"{what}: {type(err).__name__}")
            raise err
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation_id = -1
            self._lose_partitions_sync()
            raise err
        if code == ErrorCode.ILLEGAL_GENERATION:
            self.generation_id = -1
            self._lose_partitions_sync()
            raise err
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            raise err
        raise err

    def _lose_partitions_sync(self) -> None:
        """Membership lost: the assignment is void; the listener runs on the next join."""
        lost = self._subs.assigned()
        if lost:
            self._pending_lost = lost
            self._subs.set_assignment(())

    async def _lead(
        self, protocol_name: str | None, members: Sequence[Any]
    ) -> list[SyncGroupRequest.SyncGroupRequestAssignment]:
        assignor = next((a for a in self._assignors if a.name == protocol_name), None)
        if assignor is None:
            raise KafkaError(
                f"JoinGroup for group {self.group_id} from node {self._link.node_id}: field 'protocol_name' "
                f"names a protocol this member did not offer ({protocol_name!r})"
            )
        subs: dict[str, MemberSubscription] = {}
        for m in members:
            try:
                version, meta = ConsumerProtocolSubscription.decode_with_version(m.metadata)
            except DecodeError as exc:
                raise KafkaProtocolError(
                    f"JoinGroup for group {self.group_id} from node {self._link.node_id}: field "
                    f"'members[*].metadata' of member {m.member_id[:80]!r} does not decode: {exc}"
                ) from exc
            subs[m.member_id] = MemberSubscription(
                member_id=m.member_id,
                topics=tuple(meta.topics),
                group_instance_id=m.group_instance_id,
                owned_partitions=tuple(
                    TopicPartition(t.topic, p) for t in meta.owned_partitions for p in t.partitions
                ),
                generation_id=meta.generation_id,
                rack_id=meta.rack_id,
                user_data=meta.user_data,
                version=version,
            )
        topics = {t for s in subs.values() for t in s.topics}
        if not topics <= self.group_topics or any(
            self._core.store.partitions_for_topic(t) is None for t in topics
        ):
            self.group_topics = set(topics)
            await self._core.refresh_metadata(
                f"group {self.group_id} leader: metadata for {len(topics)} topics"
            )
        counts = self._partition_counts(topics)
        self._joined_topics = self._partition_counts(self._subs.topics | topics)
        plan = assignor.assign(counts, subs)
        log.info("group %s: leader assigned %s", self.group_id, {k: len(v) for k, v in plan.items()})
        out = []
        for member_id, tps in plan.items():
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(tps):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            data = ConsumerProtocolAssignment(
                assigned_partitions=[
                    ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=ps)
                    for t, ps in by_topic.items()
                ],
                user_data=assignor.assignment_user_data(member_id),
            ).encode_with_version(ASSIGNMENT_VERSION)
            out.append(SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id, assignment=data))
        return out

    async def _on_assignment(self, assigned: set[TopicPartition]) -> None:
        lost, self._pending_lost = self._pending_lost, set()
        if lost and self.listener is not None:
            await call_listener(self.listener.on_partitions_lost, lost)
        owned = self._subs.assigned()
        revoked = owned - assigned
        added = assigned - owned
        if revoked:
            await self._revoke(revoked, commit=True)
            if self.protocol == RebalanceProtocol.COOPERATIVE:
                self.request_rejoin(f"revoked {len(revoked)} partition(s) (cooperative)")
        self._subs.add_partitions(added)
        log.info(
            "group %s gen %d: member %s assigned %d partition(s) (+%d -%d)",
            self.group_id, self.generation_id, self.member_id, len(assigned), len(added), len(revoked),
        )  # fmt: skip
        self._revoked_for_join = False
        if self.listener is not None:
            await call_listener(self.listener.on_partitions_assigned, added)
        self._assignment_in_place()
        if not self._need_rejoin:
            self.stats.rebalance_done()
            self._stable = True
            self.stable_event.set()
        self._wake.set()

    async def _revoke(self, tps: set[TopicPartition], *, commit: bool) -> None:
        if commit and tps and self._config.enable_auto_commit and self.in_group:
            await self._committer.commit_consumed(tps, "before revoking")
        if self.listener is not None:
            await call_listener(self.listener.on_partitions_revoked, tps)
        self._subs.remove_partitions(tps)

    # -------------------------------------------------------------- heartbeats
    async def _heartbeat_loop(self) -> None:
        failures = 0
        while True:
            if not self._stable:
                await self.stable_event.wait()
            await anyio.sleep(self._config.heartbeat_interval / 1000)
            if not self._stable:
                continue
            idle = time.monotonic() - self._last_poll()
            if idle > self._config.max_poll_interval_ms / 1000:
                await self._poll_timeout(idle)
                continue
            try:
                await self._heartbeat()
                failures = self._recovered("heartbeat")
            except KafkaError as exc:
                failures += 1
                log.debug("group %s: heartbeat failed: %r", self.group_id, exc)
                if failures >= WARN_AFTER_HEARTBEATS:
                    self._warn.warning(
                        "heartbeat",
                        "group %s: heartbeats keep failing (%d in a row, coordinator node %s); last "
                        "error: %r; the session times out after %d ms without one",
                        self.group_id, failures, self._link.node_id, exc, self._config.session_timeout,
                    )  # fmt: skip

    async def _heartbeat(self) -> None:
        generation = self.generation_id
        request = HeartbeatRequest(
            group_id=self.group_id,
            generation_id=generation,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
        )
        for _ in range(3):  # a moved coordinator is re-found and asked again at once
            response = await self._send(request)
            code = response.error_code
            if code in COORDINATOR_MOVED:
                self._coordinator_dead("heartbeat: coordinator moved")
                continue
            break
        if not code:
            self.stats.heartbeat()
        if not code or generation != self.generation_id:
            return
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.request_rejoin("heartbeat: rebalance in progress")
        elif code in MEMBERSHIP_LOST:
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            if code == ErrorCode.FENCED_INSTANCE_ID:
                self._report_error(error_for_code(code, f"group {self.group_id}: static member fenced"))
            self.generation_id = -1
            self._lose_partitions_sync()
            self.request_rejoin(f"heartbeat: membership lost ({type(error_for_code(code)).__name__})")
        else:  # counted by the heartbeat loop (an operator is warned when it lasts)
            raise error_for_code(code, f"Heartbeat for group {self.group_id} from node {self._link.node_id}")

    async def _poll_timeout(self, idle: float) -> None:
        """Java's rule: an application that stopped polling gives its partitions up."""
        log.warning(
            "group %s: no poll for %.1f s (max_poll_interval_ms=%d); leaving the group until the next poll",
            self.group_id,
            idle,
            self._config.max_poll_interval_ms,
        )
        self.poll_expired = True
        self._lose_partitions_sync()
        await self.leave("consumer poll timeout has expired")

    def on_poll(self) -> None:
        if self.poll_expired:
            self.poll_expired = False
            self.request_rejoin("the application polls again")

    # ------------------------------------------------------------------ commits
    def commit_identity(self) -> CommitIdentity:
        if not self.in_group:
            return CommitIdentity(-1, "", None)
        return CommitIdentity(self.generation_id, self.member_id, self.group_instance_id)

    def commit_rejected(self, code: int, sent: CommitIdentity) -> bool:
        err = error_for_code(code, f"OffsetCommit for group {self.group_id}")
        if code in MEMBERSHIP_LOST and sent.generation_or_epoch == self.generation_id:
            self.generation_id = -1
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            self._lose_partitions_sync()
        self.request_rejoin(f"commit: {type(err).__name__}")
        raise CommitFailedError(
            f"commit for group {self.group_id} failed: {err}; the group rebalanced, "
            "so these partitions may belong to another member now"
        )

    async def identity_changed(self, sent: CommitIdentity) -> None:
        raise AssertionError("a classic member never asks for a retry at a new generation")

    # --------------------------------------------------------------------- exit
    async def close(self, *, leave: bool = True) -> None:
        """Commit (auto-commit) and leave unless static (KIP-345); as in aiokafka, the
        rebalance listener is not called."""
        if not self.in_group:
            return
        if self._config.enable_auto_commit:
            await self._committer.commit_consumed(None, "on close")
        if leave and self.group_instance_id is None:
            await self.leave("the consumer is closing")

    async def leave(self, reason: str) -> None:
        member_id = self.member_id
        self.generation_id = -1
        self._stable = False
        if not member_id:
            return
        try:
            conn = await self._core.pool.connection(await self._link.coordinator(), coordinator=True)
            version = conn.version_for(LeaveGroupRequest.API_KEY)
            if version >= LEAVE_GROUP_BATCH_VERSION:
                identity = LeaveGroupRequest.MemberIdentity(
                    member_id=member_id, group_instance_id=self.group_instance_id, reason=reason
                )
                request = LeaveGroupRequest(group_id=self.group_id, members=[identity])
            else:
                request = LeaveGroupRequest(group_id=self.group_id, member_id=member_id)
            response = await conn.send(request, version=version)
            if response.error_code:
                raise error_for_code(response.error_code, f"LeaveGroup from node {self._link.node_id}")
        except KafkaError as exc:  # the broker keeps the member until its session times out
            self._warn.warning(
                "leave",
                "group %s: LeaveGroup failed (%r); the group waits up to session_timeout_ms=%d for it",
                self.group_id, exc, self._config.session_timeout,
            )  # fmt: skip
        self.member_id = ""


def topics_needed(subs: SubscriptionState, coordinator: GroupMember | None) -> Collection[str] | None:
    """What the metadata refresher asks for: None (all topics) for a pattern subscription."""
    if subs.kind == SubscriptionType.AUTO_PATTERN:
        return None
    topics = set(subs.topics) | {tp.topic for tp in subs.assigned()} | subs.extra_topics
    if coordinator is not None:
        topics |= coordinator.group_topics
    return topics


__all__ = ["ConsumerRebalanceListener", "GroupCoordinator", "topics_needed"]
