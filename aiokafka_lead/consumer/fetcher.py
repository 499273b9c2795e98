"""The fetcher: one Fetch in flight per leader node, a bounded prefetch buffer, KIP-951 hints.

Each pass of :meth:`Fetcher.run` looks at every assigned partition and decides, without
awaiting, what it needs: a starting position (committed offset or reset), a KIP-320
position validation after its leader epoch moved, or a fetch from its leader. Partitions
are grouped by leader node, and a node gets one Fetch (covering all its partitions) only
when none is already in flight to it. Passes are triggered by events, never by a timer:
a fetch completing, the user draining the buffer, a seek/assign/pause, or a MetadataStore
change (a KIP-951 hint, a metadata refresh).

Each node keeps a KIP-227 incremental fetch session (``session.py``) for its regular
fetch; right after a leader move, partitions that just arrived on a node get one extra,
sessionless fetch that does not wait, so the move never waits out the node's long poll.

A node's fetch of partitions that are all caught up (the broker would hold it for
``fetch_max_wait_ms``, and the connection with it) waits, that long at most, while the same
node has buffered partitions, and then goes out with them: a long poll never parks the
next fetch of partitions the application is still reading (DESIGN.md invariant 33).

Memory: a partition with buffered data is not fetched again until it is drained, and no
Fetch starts while ``fetch_max_bytes`` are buffered; each Fetch asks for at most the free
space. So the buffer holds at most ``fetch_max_bytes`` plus what the requests in flight
(one per leader node) bring back, however far behind the user is.

KIP-951: NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH with CurrentLeader and NodeEndpoints
go to ``MetadataStore.apply_leader_hints``; an APPLIED hint sends the partition's next
request to the new leader at once (no Metadata request on that path; the store asks the
refresher for one beside it), through KIP-320 validation when the position carries an
epoch. A hint that does not advance the epoch backs the partition off exponentially, so
a broker repeating a stale leader never causes a hot loop.

KIP-392: a partition is fetched from the node ``replica_selection.ReadReplicas`` picks (its
leader, or the read replica the leader named); the rules are in that module.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import anyio
import anyio.abc
import anyio.lowlevel

from aiokafka_lead.client import ClientCore
from aiokafka_lead.consumer.buffer import Chunk, PartitionRecords
from aiokafka_lead.consumer.config import FetchConfig
from aiokafka_lead.consumer.errors import offsets_out_of_range
from aiokafka_lead.consumer.offsets import PositionManager
from aiokafka_lead.consumer.replica_selection import Answer, ReadReplicas
from aiokafka_lead.consumer.session import (
    FINAL_EPOCH,
    SESSION_MIN_VERSION,
    FetchSession,
    PartitionFetch,
    SessionPlan,
)
from aiokafka_lead.consumer.subscription import PartitionState, ResetStrategy, SubscriptionState
from aiokafka_lead.error_code import PARTITION_REFRESH, ErrorCode
from aiokafka_lead.errors import (
    DecodeError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    error_for_code,
)
from aiokafka_lead.metadata import MetadataChange
from aiokafka_lead.metadata.model import ZERO_UUID, BrokerNode, HintOutcome, LeaderHint
from aiokafka_lead.protocol.messages import FetchRequest, FetchResponse
from aiokafka_lead.ratelog import RateLimitedLog
from aiokafka_lead.records import MemoryRecords
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)
#: fetches of a partition failing in a row before an operator is warned
WARN_AFTER_FAILURES = 3

#: an empty answer within max_wait_ms / EARLY_FRACTION did not wait for data
EARLY_FRACTION = 4
KIP74_VERSION = 3  # Fetch max_bytes, and the first batch returned whole above it
TOPIC_ID_VERSION = 13
DIVERGING_EPOCH_VERSION = 12  # KIP-320: last_fetched_epoch in, diverging_epoch out
RACK_VERSION = 11  # KIP-392
EPOCH_VERSION = 9  # KIP-320: current_leader_epoch
RESET_SPECS = {ResetStrategy.EARLIEST: -2, ResetStrategy.LATEST: -1}


@dataclass(slots=True)
class FetchStats:
    """Counters for tests and metrics."""

    fetches: int = 0
    hints_applied: int = 0
    hints_ignored: int = 0
    discarded: int = 0
    #: time.monotonic() of the last fetch that returned records, per node
    last_data_at: dict[int, float] = field(default_factory=dict)
    #: seconds from an applied KIP-951 hint to the first records from the new leader
    move_recovery_s: list[float] = field(default_factory=list)
    #: seconds from an applied hint to the new leader's first answer (records or not)
    move_first_fetch_s: list[float] = field(default_factory=list)
    moved_at: dict[TopicPartition, float] = field(default_factory=dict)
    answered: set[TopicPartition] = field(default_factory=set)


@dataclass(slots=True)
class _Sent:
    fetch_offset: int
    generation: int
    leader_epoch: int
    last_fetched_epoch: int


class Fetcher:
    """Fetch loop and prefetch buffer of one consumer."""

    def __init__(
        self,
        core: ClientCore,
        subscriptions: SubscriptionState,
        positions: PositionManager,
        config: FetchConfig,
        *,
        report_error: Callable[[KafkaError], None],
    ) -> None:
        self._core = core
        self._subs = subscriptions
        self._positions = positions
        self._config = config
        self._backoff = core.backoff
        self._report_error = report_error
        self._buffer: dict[TopicPartition, PartitionRecords] = {}
        self.buffered_bytes = 0
        self.max_buffered_bytes = 0
        self._nodes_in_flight: dict[int, int] = {}
        #: time.monotonic() since which a node's fetch of caught-up partitions waits for its buffered ones
        self._deferred_since: dict[int, float] = {}
        self._unsent = 0  # fetches started whose request is not handed to the connection yet
        self._sessions: dict[int, FetchSession] = {}
        self._in_flight: set[TopicPartition] = set()
        self._wake = anyio.Event()
        self._data_ready = anyio.Event()
        self.stats = FetchStats()
        self._drain_start = 0
        self._warn = RateLimitedLog(log)
        self._node_failures: dict[int, int] = {}  # fetches failed in a row, per node
        self.replicas = ReadReplicas(core.store, expiry_ms=config.metadata_max_age_ms, backoff=core.backoff)

    # ---------------------------------------------------------------- wake-ups
    def wake(self) -> None:
        self._wake.set()

    def _on_metadata(self, change: MetadataChange) -> None:
        if change.leaders_changed or change.nodes_changed or change.topics_added:
            self.wake()

    def notify_data(self) -> None:
        """Wake ``getmany`` callers (records buffered or an error to raise)."""
        self._data_ready.set()
        self._data_ready = anyio.Event()

    async def wait_for_data(self) -> None:
        await self._data_ready.wait()

    async def send_freed(self, max_turns: int = 8) -> None:
        """Let the fetches that the last :meth:`drain` made possible go out now (pipelining).

        Called by a poll between draining and building its records, like Java's poll sends
        the next fetches before returning: the broker then works on them while the caller
        decodes and processes. A few loop turns at most; shielded, because the caller holds
        drained records (positions already advanced) that a cancellation would lose.
        """
        with anyio.CancelScope(shield=True):
            turns = 0
            while turns < max_turns and (self._wake.is_set() or self._unsent):
                await anyio.lowlevel.checkpoint()
                turns += 1
            if 0 < turns < max_turns:
                await anyio.lowlevel.checkpoint()  # the connection writes the request

    # ---------------------------------------------------------------- the loop
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        store = self._core.store
        store.add_listener(self._on_metadata)
        self._subs.listeners.append(self.wake)
        try:
            async with anyio.create_task_group() as tg:
                task_status.started()
                while True:
                    self._wake = anyio.Event()
                    next_retry = self._plan(tg)
                    timeout = max(next_retry - time.monotonic(), 0) if next_retry < math.inf else math.inf
                    with anyio.move_on_after(timeout):
                        await self._wake.wait()
        finally:
            store.remove_listener(self._on_metadata)
            if self.wake in self._subs.listeners:
                self._subs.listeners.remove(self.wake)

    def _plan(self, tg: anyio.abc.TaskGroup) -> float:
        """Decide (synchronously) what every partition needs; start those requests."""
        now = time.monotonic()
        store = self._core.store
        next_retry = math.inf
        need_position: list[TopicPartition] = []
        need_reset: list[TopicPartition] = []
        need_validation: list[TopicPartition] = []
        by_node: dict[int, list[TopicPartition]] = {}
        express: dict[int, list[TopicPartition]] = {}
        held: list[TopicPartition] = []  # buffered records the user has yet to take
        for tp, st in self._subs.items():
            buffered = self._buffer.get(tp)
            if buffered is not None and _stale(st, buffered):
                # a seek or reset since the fetch: its records go now, not at the next poll of
                # this partition (a poll of other partitions would leave the reset unplanned)
                self._discard(tp)
                buffered = None
            if buffered is not None and not st.paused:
                held.append(tp)
            if st.paused or buffered is not None or tp in self._in_flight or self._positions.busy(tp):
                continue
            if st.retry_at > now:
                next_retry = min(next_retry, st.retry_at)
                continue
            if st.reset_to is not None:
                need_reset.append(tp)
                continue
            if st.position is None:
                need_position.append(tp)
                continue
            leader = store.leader_for(tp)
            if leader is None:
                store.request_refresh(f"fetch: no known leader for {tp.topic}-{tp.partition}")
                continue
            epoch = store.leader_epoch(tp)
            if st.position_epoch >= 0 and epoch > st.validated_epoch:
                need_validation.append(tp)
                continue
            node_id = self.replicas.node_for(tp, leader)  # KIP-392: the leader or a read replica
            if st.express:
                express.setdefault(node_id, []).append(tp)
            else:
                by_node.setdefault(node_id, []).append(tp)
        if need_position:
            self._positions.start_initialize(tg, need_position)
        if need_reset:
            self._positions.start_reset(tg, need_reset)
        if need_validation:
            self._positions.start_validate(tg, need_validation)
        free = self._config.fetch_max_bytes - self.buffered_bytes
        if free <= 0:
            return next_retry
        for node_id, tps in express.items():
            in_flight = self._nodes_in_flight.get(node_id, 0)
            if in_flight == 0:
                by_node.setdefault(node_id, []).extend(tps)  # the regular fetch covers them
            elif in_flight == 1:
                # the node's long poll does not cover partitions that just moved here: one
                # extra fetch that does not wait, so a leader move costs no long-poll time
                self._start_fetch(tg, node_id, tps, free, max_wait_ms=0)
        max_wait_s = self._config.fetch_max_wait_ms / 1000
        held_nodes: set[int] | None = None  # the nodes of ``held``, found only when needed
        for node_id, tps in by_node.items():
            if self._nodes_in_flight.get(node_id, 0) != 0:
                continue
            waits = bool(held) and all(self._caught_up(tp) for tp in tps)
            if waits:
                held_nodes = self._nodes_of(held) if held_nodes is None else held_nodes
                waits = node_id in held_nodes
            if waits:
                # the broker would hold this fetch for up to fetch_max_wait_ms, and the
                # connection with it: the node's buffered partitions, once taken, could not be
                # fetched meanwhile. Wait for them (that long at most) and fetch all together.
                since = self._deferred_since.setdefault(node_id, now)
                if now - since < max_wait_s:
                    next_retry = min(next_retry, since + max_wait_s)
                    continue
            self._deferred_since.pop(node_id, None)
            self._start_fetch(tg, node_id, tps, free, max_wait_ms=self._config.fetch_max_wait_ms)
        return next_retry

    def _nodes_of(self, tps: list[TopicPartition]) -> set[int]:
        """The nodes these partitions are fetched from."""
        store = self._core.store
        return {
            self.replicas.node_for(tp, leader) for tp in tps if (leader := store.leader_for(tp)) is not None
        }

    def _caught_up(self, tp: TopicPartition) -> bool:
        """The position is at the end of what a fetch can return (a fetch would long-poll)."""
        st = self._subs.state(tp)
        end = st.last_stable_offset if self._config.isolation_level == "read_committed" else st.highwater
        return end is not None and st.position is not None and st.position >= end

    def _start_fetch(
        self,
        tg: anyio.abc.TaskGroup,
        node_id: int,
        tps: list[TopicPartition],
        max_bytes: int,
        max_wait_ms: int,
    ) -> None:
        sent = {}
        shift = self.stats.fetches % len(tps)  # rotate: no partition is always last in line
        for tp in tps[shift:] + tps[:shift]:
            st = self._subs.state(tp)
            assert st.position is not None
            sent[tp] = _Sent(st.position, st.generation, self._core.store.leader_epoch(tp), st.position_epoch)
            st.express = False
            self._in_flight.add(tp)
        self._nodes_in_flight[node_id] = self._nodes_in_flight.get(node_id, 0) + 1
        self._unsent += 1
        tg.start_soon(self._fetch, node_id, sent, max_bytes, max_wait_ms, name=f"fetch node {node_id}")

    async def _fetch(
        self, node_id: int, sent: dict[TopicPartition, _Sent], max_bytes: int, max_wait_ms: int
    ) -> None:
        unsent = [True]
        try:
            await self._fetch_once(
                node_id, sent, max_bytes, max_wait_ms, use_session=max_wait_ms > 0, unsent=unsent
            )
        except KafkaError as exc:
            if not exc.retriable:
                self._report_error(exc)
            log.debug("fetch from node %d failed: %r", node_id, exc)
            failures = self._node_failures[node_id] = self._node_failures.get(node_id, 0) + 1
            if failures >= 2:
                self._warn.warning(
                    ("node", node_id),
                    "fetches from node %d keep failing (%d in a row); retrying; last: %s",
                    node_id,
                    failures,
                    exc,
                )
            self._core.store.request_refresh(f"fetch from node {node_id} failed: {type(exc).__name__}")
            to_leader = self.replicas.on_fetch_failed(node_id, sent)  # KIP-392: at once
            self._back_off([tp for tp in sent if tp not in to_leader], exc)
        finally:
            if unsent[0]:
                self._unsent -= 1
            self._nodes_in_flight[node_id] -= 1
            self._in_flight.difference_update(sent)
            self.wake()

    def _back_off(self, tps: Iterable[TopicPartition], reason: object) -> None:
        now = time.monotonic()
        for tp in tps:
            st = self._subs.get(tp)
            if st is None:
                continue
            st.retry_at = now + self._backoff.delay_s(st.failures)
            st.failures += 1
            log.debug(
                "fetch %s-%d backs off %.0f ms: %s", tp.topic, tp.partition, (st.retry_at - now) * 1e3, reason
            )

    def _topic_id(self, name: str, version: int) -> uuid.UUID:
        """From v13 requests name topics by id (KIP-516), before by name."""
        return (self._core.store.topic_id(name) or ZERO_UUID) if version >= TOPIC_ID_VERSION else ZERO_UUID

    def _request(self, plan: SessionPlan, version: int, max_bytes: int, max_wait_ms: int) -> FetchRequest:
        topics: dict[str, list[FetchRequest.FetchPartition]] = {}
        for tp, f in plan.to_send.items():
            topics.setdefault(tp.topic, []).append(
                FetchRequest.FetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=f.current_leader_epoch,
                    fetch_offset=f.fetch_offset,
                    last_fetched_epoch=f.last_fetched_epoch,
                    log_start_offset=-1,
                    partition_max_bytes=f.partition_max_bytes,
                )
            )
        by_name = version < TOPIC_ID_VERSION
        forgotten: dict[str, list[int]] = {}
        for tp in plan.forgotten:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        return FetchRequest(
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=self._config.fetch_min_bytes,
            max_bytes=max_bytes,
            isolation_level=self._config.isolation,
            session_id=plan.session_id,
            session_epoch=plan.session_epoch,
            topics=[
                FetchRequest.FetchTopic(
                    topic=name if by_name else "", topic_id=self._topic_id(name, version), partitions=parts
                )
                for name, parts in topics.items()
            ],
            forgotten_topics_data=[
                FetchRequest.ForgottenTopic(
                    topic=name if by_name else "", topic_id=self._topic_id(name, version), partitions=parts
                )
                for name, parts in forgotten.items()
            ],
            rack_id=(self._config.client_rack or "") if version >= RACK_VERSION else "",
        )

    async def _fetch_once(
        self,
        node_id: int,
        sent: dict[TopicPartition, _Sent],
        max_bytes: int,
        max_wait_ms: int,
        *,
        use_session: bool,
        unsent: list[bool] | None = None,
    ) -> None:
        store = self._core.store
        conn = await self._core.pool.connection(node_id)
        version = conn.version_for(FetchRequest.API_KEY)
        if version >= TOPIC_ID_VERSION and any(store.topic_id(tp.topic) is None for tp in sent):
            version = TOPIC_ID_VERSION - 1  # a topic without an id: name topics instead
        wanted = {
            tp: PartitionFetch(
                fetch_offset=s.fetch_offset,
                current_leader_epoch=s.leader_epoch if version >= EPOCH_VERSION else -1,
                last_fetched_epoch=s.last_fetched_epoch if version >= DIVERGING_EPOCH_VERSION else -1,
                partition_max_bytes=self._config.max_partition_fetch_bytes,
            )
            for tp, s in sent.items()
        }
        session: FetchSession | None = None
        if use_session and self._config.fetch_sessions and version >= SESSION_MIN_VERSION:
            session = self._sessions.setdefault(node_id, FetchSession())
            if session.version != version:
                session.reset()
                session.version = version
            plan = session.plan(wanted)
        else:
            plan = SessionPlan(0, FINAL_EPOCH, wanted, (), wanted)
        request = self._request(plan, version, max_bytes, max_wait_ms)
        if not self.replicas.send_rack(node_id):
            request.rack_id = ""  # KIP-392: the replica this node names is unreachable
        self.stats.fetches += 1
        if unsent is not None and unsent[0]:
            unsent[0] = False
            self._unsent -= 1
        sent_at = time.monotonic()
        try:
            response: FetchResponse = await conn.send(
                request, version=version, timeout_ms=self._config.request_timeout_ms + max_wait_ms
            )
        except DecodeError as exc:
            if session is not None:
                session.reset()
            # retried like a cut connection (fetching changes nothing on the broker); a broker
            # that keeps answering so is warned about by the caller
            raise KafkaConnectionError(f"{exc}; fetching again") from exc
        except BaseException:
            if session is not None:
                session.reset()
            raise
        if session is not None:
            session.on_response(plan, response.error_code, response.session_id)
        if response.error_code:  # a failure like any other (counted by the caller)
            raise error_for_code(response.error_code, f"Fetch from node {node_id}")
        if self._node_failures.pop(node_id, 0) >= 2:
            log.info("fetches from node %d succeed again", node_id)
            self._warn.clear(("node", node_id))
        # an answer without records long before max_wait_ms: the broker did not wait for data
        early = max_wait_ms > 0 and time.monotonic() - sent_at < max_wait_ms / 1000 / EARLY_FRACTION
        self._handle_response(
            node_id, version, sent, response, f"Fetch v{version} from {conn.broker}", early=early
        )

    # ----------------------------------------------------------- the response
    def _handle_response(
        self,
        node_id: int,
        version: int,
        sent: dict[TopicPartition, _Sent],
        response: FetchResponse,
        source: str = "Fetch",
        *,
        early: bool = False,
    ) -> None:
        store = self._core.store
        empty: list[TopicPartition] = []
        hints: list[LeaderHint] = []
        hinted: list[TopicPartition] = []
        retry: list[TopicPartition] = []
        failing: dict[TopicPartition, KafkaError] = {}
        got_data = False
        seen_records = False  # KIP-74: the first partition with records is owed a whole batch
        for t in response.responses:
            name = t.topic if version < TOPIC_ID_VERSION else store.topic_name(t.topic_id)
            if name is None:
                continue
            for p in t.partitions:
                owed_whole = not seen_records and version >= KIP74_VERSION
                seen_records = seen_records or bool(p.records)
                tp = TopicPartition(name, p.partition_index)
                s = sent.get(tp)
                st = self._subs.get(tp)
                if s is None or st is None or st.generation != s.generation or st.position != s.fetch_offset:
                    self.stats.discarded += 1
                    continue  # sought, reset or unassigned meanwhile
                code = p.error_code
                if code == ErrorCode.NONE:
                    answer = self.replicas.on_answer(
                        tp,
                        node_id,
                        p.preferred_read_replica if version >= RACK_VERSION else -1,
                        s.leader_epoch,
                        len(p.records) if p.records is not None else 0,
                    )
                    if answer is Answer.DATA:
                        accepted = self._accept(
                            tp, st, s, p, source=source, owed_whole=owed_whole, early=early
                        )
                        got_data |= accepted
                        if not accepted and not p.records:
                            empty.append(tp)
                    elif answer is Answer.NOT_FOLLOWED:
                        retry.append(tp)
                    continue
                # KIP-392: any error from a read replica sends the partition back to its leader
                from_replica = self.replicas.on_error(tp, node_id, error_for_code(code).error_name)
                if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
                    leader = p.current_leader
                    hints.append(LeaderHint(name, tp.partition, leader.leader_id, leader.leader_epoch))
                    hinted.append(tp)
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE and not from_replica:
                    self._out_of_range(tp, st, s.fetch_offset)
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    retry.append(tp)  # a read replica's answer: the leader decides (after a backoff)
                else:
                    err = error_for_code(code, f"Fetch {tp.topic}-{tp.partition} from node {node_id}")
                    if code in PARTITION_REFRESH:
                        store.request_refresh(f"fetch {tp.topic}-{tp.partition}: {type(err).__name__}")
                    if not err.retriable:
                        self._report_error(err)
                    retry.append(tp)
                    failing[tp] = err
        if hinted:
            self._apply_hints(node_id, hints, sent, response)
        if retry:
            self._back_off(retry, "partition error")
        for tp, failure in failing.items():  # an error that lasts: one WARNING, not one per fetch
            if (st := self._subs.get(tp)) is not None and st.failures >= WARN_AFTER_FAILURES:
                self._warn.warning(
                    ("partition", tp),
                    "fetches of %s-%d keep failing (%d in a row); retrying; last: %r",
                    tp.topic, tp.partition, st.failures, failure,
                )  # fmt: skip
        if early and empty and not got_data and not retry and not hinted:
            # nothing to read and no reason to answer early: pace the next fetch (a broker
            # that ignores max_wait_ms, or knows no epoch like ours, would make a storm)
            self._back_off(empty, "empty answer long before max_wait_ms")
            if any((st := self._subs.get(tp)) is not None and st.failures >= 3 for tp in empty):
                self._warn.warning(
                    ("early", node_id),
                    "%s: empty answers long before max_wait_ms, again and again (a broker that does "
                    "not wait for data); fetching from it is paced",
                    source,
                )
        if got_data:
            self.stats.last_data_at[node_id] = time.monotonic()
            self.notify_data()

    def _apply_hints(
        self,
        node_id: int,
        hints: list[LeaderHint],
        sent: dict[TopicPartition, _Sent],
        response: FetchResponse,
    ) -> None:
        """KIP-951: retry at once when the leader epoch moved past the one we fetched with.

        The hint itself may advance it (APPLIED), or a Metadata response may already have
        (the hint is then "stale" for the store but the store knows a newer leader). Only
        when the store still has the epoch we used does the partition back off.
        """
        store = self._core.store
        endpoints = [BrokerNode(n.node_id, n.host, n.port, n.rack) for n in response.node_endpoints]
        outcomes = store.apply_leader_hints(hints, endpoints, reason=f"fetch hint from node {node_id}")
        stale = []
        now = time.monotonic()
        for hint in hints:
            tp = hint.tp
            if outcomes.get(tp) == HintOutcome.APPLIED:
                self.stats.hints_applied += 1
            else:
                self.stats.hints_ignored += 1
            st = self._subs.get(tp)
            if st is None:
                continue
            if store.leader_epoch(tp) > sent[tp].leader_epoch:
                self.stats.moved_at[tp] = now
                self.stats.answered.discard(tp)
                st.retry_at = 0.0
                st.failures = 0
                st.express = True
            else:
                stale.append(tp)
        if stale:
            self._back_off(stale, "leader moved, no usable hint")

    def _accept(
        self,
        tp: TopicPartition,
        st: PartitionState,
        s: _Sent,
        p: FetchResponse.PartitionData,
        *,
        source: str = "Fetch",
        owed_whole: bool = False,
        early: bool = False,
    ) -> bool:
        div = p.diverging_epoch
        if div is not None and (div.epoch >= 0 or div.end_offset >= 0):
            self._positions.truncated(tp, st, div.end_offset, div.epoch, source="fetch DivergingEpoch")
            return False
        moved = self.stats.moved_at.get(tp)
        if moved is not None and tp not in self.stats.answered:
            self.stats.answered.add(tp)
            self.stats.move_first_fetch_s.append(time.monotonic() - moved)
        # the leader accepted our epoch and found no divergence: the position is valid for it
        st.validated_epoch = max(st.validated_epoch, s.leader_epoch)
        st.last_fetch_ms = int(time.time() * 1000)
        if p.high_watermark >= 0:
            st.highwater = max(st.highwater or 0, p.high_watermark)
        if p.last_stable_offset >= 0:
            st.last_stable_offset = max(st.last_stable_offset or 0, p.last_stable_offset)
        if p.log_start_offset >= 0:
            st.log_start_offset = p.log_start_offset
        data = p.records
        if not data:
            if not early:
                st.failures = 0  # a long poll that found nothing: all is well
            return False
        raw = bytes(data)
        if not self._progresses(tp, s.fetch_offset, raw, source, owed_whole):
            return False
        st.failures = 0
        aborted = None
        if self._config.isolation == 1 and p.aborted_transactions:
            aborted = [(a.producer_id, a.first_offset) for a in p.aborted_transactions]
        records = PartitionRecords(
            tp,
            raw,
            fetch_offset=s.fetch_offset,
            generation=s.generation,
            aborted=aborted,
            read_committed=self._config.isolation == 1,
            check_crcs=self._config.check_crcs,
        )
        self._buffer[tp] = records
        self.buffered_bytes += records.size
        moved = self.stats.moved_at.pop(tp, None)
        if moved is not None:
            self.stats.move_recovery_s.append(time.monotonic() - moved)
        self.max_buffered_bytes = max(self.max_buffered_bytes, self.buffered_bytes)
        return True

    def _progresses(
        self, tp: TopicPartition, fetch_offset: int, raw: bytes, source: str, owed_whole: bool
    ) -> bool:
        """Whether the records take the position forward; if not, the partition backs off
        exponentially (a broker that keeps answering so never causes a fetch storm) and the
        problem is logged or, when the broker owed a whole batch, raised."""
        try:
            next_offset = MemoryRecords(raw, topic=tp.topic, partition=tp.partition).next_offset()
        except DecodeError as exc:
            raise DecodeError(f"{source}: records of {tp.topic}-{tp.partition}: {exc}") from None
        where = f"{source}: {tp.topic}-{tp.partition} at offset {fetch_offset}"
        if next_offset is None and owed_whole:
            # KIP-74: the first batch of the first partition with records is returned whole,
            # however large; a broker that sends less stays stuck there (Java: "failed to make
            # progress")
            self._report_error(
                KafkaProtocolError(
                    f"{where}: failed to make progress: the answer holds {len(raw)} bytes but no "
                    "complete record batch, although the broker owed one whole batch (KIP-74)"
                )
            )
            self._back_off([tp], "no complete batch, although owed one")
            return False
        if next_offset is None:
            # only a cut-off batch after other partitions' data (brokers send none since KIP-74)
            self._back_off([tp], "fetch returned only a partial batch")
            return False
        if next_offset <= fetch_offset:
            self._warn.warning(
                ("below", tp),
                "%s: the answer's records end at offset %d, below the fetch offset: no progress; "
                "backing off",
                where,
                next_offset - 1,
            )
            self._back_off([tp], f"records end at {next_offset - 1}, below the fetch offset")
            return False
        self._warn.clear(("below", tp))
        return True

    def _out_of_range(self, tp: TopicPartition, st: PartitionState, offset: int) -> None:
        strategy = self._subs.default_reset
        if strategy == ResetStrategy.NONE:
            self._subs.fail_partition(tp, offsets_out_of_range({tp: offset}))
            return
        log.info(
            "fetch offset %d out of range for %s-%d; resetting to %s",
            offset,
            tp.topic,
            tp.partition,
            strategy.value,
        )
        self._subs.request_reset(tp, RESET_SPECS[strategy])

    # --------------------------------------------------------------- draining
    def has_data(self, partitions: set[TopicPartition] | None = None) -> bool:
        return any(partitions is None or tp in partitions for tp in self._buffer)

    def drain(
        self, max_records: int, partitions: set[TopicPartition] | None = None
    ) -> dict[TopicPartition, list[Chunk]]:
        """Hand out buffered records, a batch slice at a time (round-robin over partitions);
        positions advance."""
        out: dict[TopicPartition, list[Chunk]] = {}
        keys = list(self._buffer)
        if not keys:
            return out
        start = self._drain_start % len(keys)
        self._drain_start += 1
        budget = max_records
        freed = False
        for tp in keys[start:] + keys[:start]:
            if budget <= 0:
                break
            if partitions is not None and tp not in partitions:
                continue
            pr = self._buffer[tp]
            st = self._subs.get(tp)
            if st is None or _stale(st, pr):
                self._discard(tp)
                freed = True
                continue
            if st.paused:
                continue
            try:
                got = pr.take_chunks(budget)
            except KafkaError:
                self._discard(tp)
                self.wake()
                raise
            self._subs.advance(tp, pr.next_offset, pr.next_epoch)
            if got:
                out[tp] = got
                budget -= sum(len(records) for records, _, _ in got)
            if pr.exhausted:
                self._discard(tp)
                freed = True
        if freed:
            self.wake()
        return out

    def _discard(self, tp: TopicPartition) -> None:
        pr = self._buffer.pop(tp, None)
        if pr is not None:
            self.buffered_bytes -= pr.size

    def discard_unassigned(self) -> None:
        for tp in [tp for tp in self._buffer if not self._subs.is_assigned(tp)]:
            self._discard(tp)
        self.replicas.forget(tp for tp in self.replicas.in_use() if not self._subs.is_assigned(tp))

    @property
    def sessions(self) -> dict[int, FetchSession]:
        """KIP-227 sessions per node (their counters are for tests and metrics)."""
        return self._sessions

    def in_flight_partitions(self) -> set[TopicPartition]:
        return set(self._in_flight)


def _stale(st: PartitionState, buffered: PartitionRecords) -> bool:
    """Buffered records that no longer follow the partition's position (seek, reset)."""
    return (
        st.generation != buffered.generation
        or st.position != buffered.next_offset
        or st.reset_to is not None
    )


__all__ = ["FetchStats", "Fetcher"]
