"""KIP-848: a member of a consumer-protocol group (``group_protocol="consumer"``).

The broker computes the assignment; the member only heartbeats (ConsumerGroupHeartbeat)
and reconciles. Two tasks run in the consumer's task group:

* the heartbeat loop sends the member's state every ``heartbeat_interval_ms`` (the
  broker's value), and at once after a reconciliation step, a subscription change or a
  fencing; it stores the target assignment (topic ids) each response may carry;
* the reconciler moves the owned partitions towards the target one step at a time, in
  Java's order: pause and commit the partitions going away (auto-commit), call
  ``on_partitions_revoked``, drop them; add the new ones and call
  ``on_partitions_assigned``; then wake the heartbeat loop to report what it owns.
  Partitions that no longer belong to the member stop only while they move; the others
  keep delivering records throughout.

Fencing (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID): every partition is given up through
``on_partitions_lost`` before the member joins again at epoch 0 with the same member id
(the client generates it for v1). A static member (``group_instance_id``) leaves with
epoch -2, so a restart within the session timeout gets its partitions back; a dynamic
member leaves with -1. A pattern subscription goes to the broker as a regular expression
(v1, RE2/J syntax) and is matched here against the topic list when the broker speaks v0.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, ClassVar

import anyio
import anyio.abc

from aiokafka_lead.consumer.commits import CommitIdentity
from aiokafka_lead.consumer.errors import CommitFailedError
from aiokafka_lead.consumer.group_common import call_listener
from aiokafka_lead.consumer.member_base import GroupMemberBase, Loop
from aiokafka_lead.consumer.subscription import SubscriptionType
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaError, KafkaProtocolError, UnsupportedVersionError, error_for_code
from aiokafka_lead.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from aiokafka_lead.requests.coordinator import HeartbeatErrors, new_member_id
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)

HEARTBEAT = ConsumerGroupHeartbeatRequest.API_KEY
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
#: consecutive failed heartbeats after which an operator is warned
WARN_AFTER_FAILURES = 3
#: v1: the client generates the member id and may send a regular expression
CLIENT_MEMBER_ID_VERSION = 1
#: until the broker says otherwise (Kafka's group.consumer.heartbeat.interval.ms default)
DEFAULT_HEARTBEAT_MS = 5000


class ConsumerGroupMember(GroupMemberBase, HeartbeatErrors):
    """Membership of one consumer in one consumer-protocol group (KIP-848)."""

    _log = log
    #: the member retries heartbeats for ever, as Java's
    _RETRIED: ClassVar[dict[str, tuple[str, int]]] = {
        "heartbeat": ("heartbeats keep failing", WARN_AFTER_FAILURES)
    }

    def _init_protocol(self) -> None:
        self._error_answers = 0  # retriable error answers in a row
        self.member_id = ""
        self.member_epoch = 0
        self.heartbeat_interval_s = DEFAULT_HEARTBEAT_MS / 1000
        #: the broker's target assignment (topic id -> partitions); None: none received yet
        self._target: dict[uuid.UUID, frozenset[int]] | None = None
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._unresolved: set[uuid.UUID] = set()
        #: target partitions beyond their topic's partition count (left out), and those of
        #: them a refresh has confirmed (refused with a warning)
        self._beyond: set[TopicPartition] = set()
        self._refused: set[TopicPartition] = set()
        #: partitions must be given up (fenced, poll timeout) before the member may rejoin
        self._fenced = False
        self._fatal: KafkaError | None = None
        self._closing = False
        #: v1 coordinators match a pattern themselves; v0 ones get the names matched here
        self._regex_supported = True
        #: bumped whenever the membership restarts (fenced, left): stale work is dropped
        self._incarnation = 0
        self._wake = anyio.Event()
        self._reconcile_wake = anyio.Event()
        self._identity_event = anyio.Event()
        #: answered heartbeats, completed reconciliation steps, fencings (tests and metrics)
        self.heartbeats = 0
        self.reconciliations = 0
        self.fencings = 0

    # ------------------------------------------------------------------ state
    @property
    def generation_id(self) -> int:
        return self.member_epoch if self.member_epoch > 0 else -1

    @property
    def in_group(self) -> bool:
        return self.member_epoch > 0

    def _set_epoch(self, epoch: int) -> None:
        if epoch != self.member_epoch:
            self.member_epoch = epoch
            self._identity_event.set()
            self._identity_event = anyio.Event()

    def _wants_membership(self) -> bool:
        return self._subs.kind in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)

    def _may_heartbeat(self) -> bool:
        return (
            self._wants_membership()
            and not (self._fenced or self.poll_expired or self._closing)
            and self._fatal is None
        )

    def request_rejoin(self, reason: str) -> None:
        """The subscription changed: tell the broker now (and retry after a fatal error)."""
        log.info("group %s: heartbeat requested: %s", self.group_id, reason)
        self._fatal = None
        self._wake.set()

    def on_metadata_change(self) -> None:
        pattern = self._subs.kind == SubscriptionType.AUTO_PATTERN
        if pattern and self._subs.match_pattern(self._core.store.topics()) and not self._broker_regex():
            self._wake.set()  # the client-side match changed: send the new topic names
        if self._unresolved or self._beyond:
            self._reconcile_wake.set()

    def on_poll(self) -> None:
        if self.poll_expired:
            self.poll_expired = False
            log.info("group %s: the application polls again; rejoining", self.group_id)
            self._wake.set()

    def _broker_regex(self) -> bool:
        return self._subs.kind == SubscriptionType.AUTO_PATTERN and self._regex_supported

    # ------------------------------------------------------------------- tasks
    def _loops(self) -> tuple[Loop, Loop]:
        return self._reconcile_loop, self._heartbeat_loop

    async def _heartbeat_loop(self) -> None:
        failures = 0
        while True:
            if not self._may_heartbeat():
                self._wake = anyio.Event()
                if not self._may_heartbeat():
                    await self._wake.wait()
                continue
            idle_s = time.monotonic() - self._last_poll()
            if self.in_group and idle_s > self._config.max_poll_interval_ms / 1000:
                await self._poll_timeout()
                continue
            self._wake = anyio.Event()
            try:
                delay = await self._heartbeat()
                failures = 0 if delay > 0 else failures + 1
                if delay == 0 and failures > 1:
                    delay = self._backoff.delay_s(failures - 2)
            except UnsupportedVersionError as exc:
                self._fail(self._no_consumer_protocol(str(exc)))
                continue
            except KafkaError as exc:
                delay = self._backoff.delay_s(failures)
                failures = self._retrying("heartbeat", exc, delay, failures)
            with anyio.move_on_after(delay):
                await self._wake.wait()

    def _request(self, version: int, epoch: int) -> ConsumerGroupHeartbeatRequest:
        if not self.member_id and version >= CLIENT_MEMBER_ID_VERSION:
            self.member_id = new_member_id()
        if epoch < 0:  # leaving: identity only
            return ConsumerGroupHeartbeatRequest(
                group_id=self.group_id,
                member_id=self.member_id,
                member_epoch=epoch,
                instance_id=self.group_instance_id,
            )
        self._regex_supported = version >= CLIENT_MEMBER_ID_VERSION
        regex = self._subs.pattern.pattern if self._broker_regex() and self._subs.pattern else None
        owned: dict[uuid.UUID, list[int]] = {}
        for tp in sorted(self._subs.assigned()):
            topic_id = self._topic_ids.get(tp.topic) or self._core.store.topic_id(tp.topic)
            if topic_id is not None:
                owned.setdefault(topic_id, []).append(tp.partition)
        return ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.group_instance_id,
            rack_id=self._config.client_rack,
            rebalance_timeout_ms=self._config.rebalance_timeout,
            subscribed_topic_names=None if regex is not None else sorted(self._subs.topics),
            subscribed_topic_regex=regex,
            server_assignor=self._config.group_remote_assignor,
            topic_partitions=[
                ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=t, partitions=ps)
                for t, ps in owned.items()
            ],
        )

    async def _send(self, epoch: int) -> ConsumerGroupHeartbeatResponse:
        response: ConsumerGroupHeartbeatResponse = await self._link.send_built(
            HEARTBEAT,
            lambda version: self._request(version, epoch),
            timeout_ms=self._config.request_timeout_ms,
        )
        return response

    async def _heartbeat(self) -> float:
        """One heartbeat; returns the delay before the next one (0: at once), counted from when
        this one was sent, so a slow answer does not stretch the member's rhythm."""
        incarnation = self._incarnation
        sent_at = time.monotonic()
        response = await self._send(self.member_epoch)
        if incarnation != self._incarnation:
            return 0.0  # fenced or left while the request was out: its answer is void
        code = response.error_code
        if code:
            return self._on_error(code, response.error_message)
        self._check_answer(response)
        self._error_answers = 0
        self._warn.clear("heartbeat")
        self.heartbeats += 1
        self.stats.heartbeat()
        if response.member_id:
            self.member_id = response.member_id
        if response.heartbeat_interval_ms > 0:
            self.heartbeat_interval_s = response.heartbeat_interval_ms / 1000
        if response.member_epoch != self.member_epoch:
            log.debug(
                "group %s: member epoch %d -> %d", self.group_id, self.member_epoch, response.member_epoch
            )
        self._set_epoch(response.member_epoch)
        if response.assignment is not None:
            self._target = {
                tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions
            }
            self._reconcile_wake.set()
        return max(self.heartbeat_interval_s - (time.monotonic() - sent_at), 0.001)

    def _where(self) -> str:
        return f"ConsumerGroupHeartbeat for group {self.group_id} from node {self._link.node_id}"

    def _check_answer(self, response: ConsumerGroupHeartbeatResponse) -> None:
        """Refuse an answer that cannot be this member's: another member id (from v1 the id is
        the client's own) or an assignment naming a partition below 0 or one twice. The answer
        is ignored; the next heartbeat (a full one) brings the assignment again."""
        problem = None
        if self._regex_supported and response.member_id and response.member_id != self.member_id:
            problem = f"field 'member_id' names another member ({response.member_id[:80]!r})"
        elif response.assignment is not None:
            for tp in response.assignment.topic_partitions:
                indexes = list(tp.partitions)
                if any(p < 0 for p in indexes) or len(set(indexes)) != len(indexes):
                    problem = (
                        f"field 'assignment.topic_partitions[*].partitions' lists {sorted(indexes)[:10]} "
                        f"for topic id {tp.topic_id} (indexes must be >= 0, each once)"
                    )
                    break
        if problem is not None:
            raise KafkaProtocolError(f"{self._where()}: {problem}")

    def _no_consumer_protocol(self, detail: str) -> UnsupportedVersionError:
        return UnsupportedVersionError(
            f"group {self.group_id}: the coordinator does not speak the consumer group protocol "
            f"(KIP-848, ConsumerGroupHeartbeat): {detail}; use group_protocol='classic'"
        )

    def _on_error(self, code: int, message: str | None) -> float:
        err = error_for_code(code, f"{self._where()}{f': {message}' if message else ''}")
        if code == ErrorCode.UNSUPPORTED_VERSION:
            # a broker that advertises the API but does not run the protocol (Kafka 3.x)
            self._fail(self._no_consumer_protocol(f"it answers {err}"))
            return 0.0
        if code == ErrorCode.UNKNOWN_MEMBER_ID and not self._regex_supported:
            self.member_id = ""  # v0: the broker hands out a new id
        return self._heartbeat_error(code, err)

    def _error_answer(self, err: KafkaError) -> None:
        """One more retriable error answer in a row: an operator hears of it when it lasts."""
        self._error_answers += 1
        if self._error_answers >= WARN_AFTER_FAILURES:
            self._warn.warning(
                "heartbeat",
                "group %s: heartbeats keep failing (%d in a row); last error: %r; still retrying",
                self.group_id, self._error_answers, err,
            )  # fmt: skip

    def _fence(self, reason: str) -> None:
        """The broker no longer knows this member at its epoch: give everything up, rejoin."""
        log.warning(
            "group %s: member %s fenced (%s); rejoining at epoch 0", self.group_id, self.member_id, reason
        )
        self.fencings += 1
        self._incarnation += 1
        self._fenced = True
        self._target = None
        self._set_epoch(0)
        self._reconcile_wake.set()

    async def _poll_timeout(self) -> None:
        """Java's rule: an application that stopped polling leaves until it polls again."""
        log.warning(
            "group %s: no poll within max_poll_interval_ms=%d; leaving the group until the next poll",
            self.group_id,
            self._config.max_poll_interval_ms,
        )
        self.poll_expired = True
        await self._send_leave("poll timeout")
        self._fence("consumer poll timeout has expired")

    # ------------------------------------------------------------- reconciling
    async def _reconcile_loop(self) -> None:
        while True:
            self._reconcile_wake = anyio.Event()
            if self._fenced:
                await self._give_up_partitions()
                self._fenced = False
                self._wake.set()
                continue
            step = self._next_step()
            if not self._beyond <= self._refused:
                await self._refuse_beyond_count()
                continue
            if step is None:
                if self.in_group and self._target is not None and not self._unresolved:
                    self._assignment_in_place()
                    self.stats.rebalance_done()
                await self._reconcile_wake.wait()
                continue
            self.stats.rebalance_started()
            await self._reconcile(*step)

    def _next_step(self) -> tuple[set[TopicPartition], set[TopicPartition]] | None:
        """(to revoke, to add) towards the target, or None when there is nothing to do."""
        if self._target is None or not self.in_group:
            return None
        target = self._resolve_target(self._target)
        owned = self._subs.assigned()
        revoke, add = owned - target, target - owned
        if not revoke and not add:
            return None
        return revoke, add

    def _resolve_target(self, assigned: dict[uuid.UUID, frozenset[int]]) -> set[TopicPartition]:
        """The target's partitions by topic name. Topic ids the metadata does not know yet
        wait for a refresh (``_unresolved``); partitions beyond their topic's count are left
        out (``_beyond``): the topic may have just grown, or the answer lies."""
        store = self._core.store
        target: set[TopicPartition] = set()
        beyond: set[TopicPartition] = set()
        unresolved = set()
        for topic_id, partitions in assigned.items():
            name = store.topic_name(topic_id)
            if name is None:
                unresolved.add(topic_id)
                continue
            self._topic_ids[name] = topic_id
            known = store.partitions_for_topic(name) or set()
            for p in partitions:
                (target if p in known else beyond).add(TopicPartition(name, p))
        if unresolved and unresolved != self._unresolved:
            store.request_refresh(f"group {self.group_id}: assigned unknown topic ids")
        self._unresolved = unresolved
        self._beyond = beyond
        if not beyond:
            self._refused.clear()
        return target

    async def _refuse_beyond_count(self) -> None:
        """New partitions beyond their topic's count: one metadata refresh (a topic that just
        grew shows them), then those still beyond it are refused with a warning, never
        fetched; a later refresh that shows them lets them in."""
        try:
            with anyio.move_on_after(self._config.request_timeout_ms / 1000):
                await self._core.refresh_metadata(
                    f"group {self.group_id}: assigned partitions beyond the topic's count"
                )
        except KafkaError as exc:
            log.debug("group %s: metadata refresh failed: %r", self.group_id, exc)
        if self._target is not None:
            self._resolve_target(self._target)
        self._refused |= self._beyond
        if self._beyond:
            store = self._core.store
            self._warn.warning(
                "beyond count",
                "group %s epoch %d: %s assigns %d partition(s) beyond their topic's partition count "
                "(%s); refused, not fetched",
                self.group_id, self.member_epoch, self._where(), len(self._beyond),
                ", ".join(
                    f"partition {tp.partition} of {tp.topic!r} "
                    f"({len(store.partitions_for_topic(tp.topic) or ())} partitions)"
                    for tp in sorted(self._beyond)[:10]
                ),
            )  # fmt: skip

    async def _reconcile(self, revoke: set[TopicPartition], add: set[TopicPartition]) -> None:
        incarnation = self._incarnation
        if revoke:
            self._subs.pause(revoke)  # nothing more is handed out from them while they go
            if self._config.enable_auto_commit:
                await self._committer.commit_consumed(
                    revoke, "before revoking", timeout_ms=self._config.rebalance_timeout
                )
            if self.listener is not None:
                await call_listener(self.listener.on_partitions_revoked, revoke)
            if incarnation != self._incarnation:
                return  # fenced meanwhile: the partitions are given up as lost instead
            self._subs.remove_partitions(revoke)
        if add:
            self._subs.add_partitions(add)
            if self.listener is not None:
                await call_listener(self.listener.on_partitions_assigned, add)
        self.reconciliations += 1
        log.info(
            "group %s epoch %d: member %s owns %d partition(s) (+%d -%d)",
            self.group_id, self.member_epoch, self.member_id,
            len(self._subs.assigned()), len(add), len(revoke),
        )  # fmt: skip
        self._wake.set()  # report the new ownership now

    async def _give_up_partitions(self) -> None:
        lost = self._subs.assigned()
        if not lost:
            return
        self._subs.set_assignment(())
        if self.listener is not None:
            await call_listener(self.listener.on_partitions_lost, lost)

    # ------------------------------------------------------------------ commits
    def commit_identity(self) -> CommitIdentity:
        if not self.in_group:
            return CommitIdentity(-1, "", None)
        return CommitIdentity(self.member_epoch, self.member_id, self.group_instance_id)

    def commit_rejected(self, code: int, sent: CommitIdentity) -> bool:
        if sent != self.commit_identity():
            return True  # the epoch moved on while the commit was out: send it again with the new one
        if code == ErrorCode.STALE_MEMBER_EPOCH or (sent.generation_or_epoch < 0 and self._may_heartbeat()):
            self._wake.set()  # the next heartbeat brings the epoch to commit with
            return True
        self._wake.set()  # fenced: the heartbeat finds out and gives the partitions up
        err = error_for_code(code, f"OffsetCommit for group {self.group_id}")
        raise CommitFailedError(
            f"commit for group {self.group_id} failed: {err}; the member was fenced, "
            "so these partitions may belong to another member now"
        )

    async def identity_changed(self, sent: CommitIdentity) -> None:
        while self.commit_identity() == sent:
            await self._identity_event.wait()

    # --------------------------------------------------------------------- exit
    async def close(self, *, leave: bool = True) -> None:
        """Commit (auto-commit), run the revoke callback, leave (epoch -1, or -2 if static)."""
        if not self.in_group:
            return
        self._closing = True
        owned = self._subs.assigned()
        if self._config.enable_auto_commit:
            await self._committer.commit_consumed(None, "on close")
        if self.listener is not None and owned:
            await call_listener(self.listener.on_partitions_revoked, owned)
        if leave:
            await self.leave("the consumer is closing")

    async def leave(self, reason: str) -> None:
        await self._send_leave(reason)
        self._target = None
        self._set_epoch(0)

    async def _send_leave(self, reason: str) -> None:
        if not self.in_group:
            return
        self._incarnation += 1
        epoch = STATIC_LEAVE_EPOCH if self.group_instance_id is not None else LEAVE_EPOCH
        log.info("group %s: member %s leaves (epoch %d): %s", self.group_id, self.member_id, epoch, reason)
        try:
            response = await self._send(epoch)
            if response.error_code:
                log.info("group %s: leave: %r", self.group_id, error_for_code(response.error_code))
        except KafkaError as exc:
            log.info("group %s: leave failed: %r", self.group_id, exc)

    def describe(self) -> dict[str, Any]:
        """Where the member stands (for logs and tests)."""
        return {
            "member_id": self.member_id,
            "member_epoch": self.member_epoch,
            "owned": sorted(self._subs.assigned()),
            "unresolved_topic_ids": sorted(map(str, self._unresolved)),
            "fenced": self._fenced,
        }


__all__ = ["ConsumerGroupMember", "new_member_id"]
