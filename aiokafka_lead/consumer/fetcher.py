"""The fetcher: what every partition needs next, one Fetch in flight per node, a bounded buffer.

Its parts: ``fetch_request.py`` builds the request, ``fetch_response.py`` applies the
answer (or the failure) to the partitions, ``prefetch.py`` holds the records until the user
takes them.

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

KIP-951 (``fetch_response.py``): NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH with
CurrentLeader and NodeEndpoints go to ``MetadataStore.apply_leader_hints``; an APPLIED hint
sends the partition's next request to the new leader at once (no Metadata request on that
path; the store asks the refresher for one beside it), through KIP-320 validation when the
position carries an epoch. A hint that does not advance the epoch backs the partition off exponentially, so
a broker repeating a stale leader never causes a hot loop.

KIP-392: a partition is fetched from the node ``replica_selection.ReadReplicas`` picks (its
leader, or the read replica the leader named); the rules are in that module.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

import anyio
import anyio.abc
import anyio.lowlevel

from aiokafka_lead.consumer.buffer import Chunk
from aiokafka_lead.consumer.config import FetchConfig
from aiokafka_lead.consumer.fetch_request import TOPIC_ID_VERSION, Sent, fetch_request, partition_fetches
from aiokafka_lead.consumer.fetch_response import FetchResponseHandler, FetchStats
from aiokafka_lead.consumer.offsets import PositionManager
from aiokafka_lead.consumer.prefetch import PrefetchBuffer
from aiokafka_lead.consumer.replica_selection import ReadReplicas
from aiokafka_lead.consumer.session import FINAL_EPOCH, SESSION_MIN_VERSION, FetchSession, SessionPlan
from aiokafka_lead.consumer.subscription import SubscriptionState
from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.errors import DecodeError, KafkaConnectionError, KafkaError, error_for_code
from aiokafka_lead.metadata import MetadataChange
from aiokafka_lead.protocol.messages import FetchRequest, FetchResponse
from aiokafka_lead.runtime import WakeLoop
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)

#: an empty answer within max_wait_ms / EARLY_FRACTION did not wait for data
EARLY_FRACTION = 4


class Fetcher:
    """Fetch loop of one consumer, over its prefetch buffer."""

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
        #: fetched records the user has yet to take (its byte counters are for tests and metrics)
        self.buffer = PrefetchBuffer(subscriptions, freed=self.wake)
        self._nodes_in_flight: dict[int, int] = {}
        #: time.monotonic() since which a node's fetch of caught-up partitions waits for its buffered ones
        self._deferred_since: dict[int, float] = {}
        self._unsent = 0  # fetches started whose request is not handed to the connection yet
        self._sessions: dict[int, FetchSession] = {}
        self._in_flight: set[TopicPartition] = set()
        self._loop = WakeLoop(lambda tg: self._plan(tg))  # noqa: PLW0108 - looked up at each pass
        self._data_ready = anyio.Event()
        self.stats = FetchStats()
        self.replicas = ReadReplicas(core.store, expiry_ms=config.metadata_max_age_ms, backoff=core.backoff)
        self._answers = FetchResponseHandler(
            core, subscriptions, positions, config, self.buffer, self.replicas, self.stats,
            report_error=report_error, notify_data=self.notify_data,
        )  # fmt: skip

    # ---------------------------------------------------------------- wake-ups
    def wake(self) -> None:
        self._loop.wake()

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
            while turns < max_turns and (self._loop.woken or self._unsent):
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
            await self._loop.run(task_status=task_status)
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
            # records of a seek or reset since the fetch go now, not at the next poll of this
            # partition (a poll of other partitions would leave the reset unplanned)
            buffered = self.buffer.holds(tp, st)
            if buffered and not st.paused:
                held.append(tp)
            if st.paused or buffered or tp in self._in_flight or self._positions.busy(tp):
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
        free = self._config.fetch_max_bytes - self.buffer.bytes
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
            sent[tp] = Sent(st.position, st.generation, self._core.store.leader_epoch(tp), st.position_epoch)
            st.express = False
            self._in_flight.add(tp)
        self._nodes_in_flight[node_id] = self._nodes_in_flight.get(node_id, 0) + 1
        self._unsent += 1
        tg.start_soon(self._fetch, node_id, sent, max_bytes, max_wait_ms, name=f"fetch node {node_id}")

    async def _fetch(
        self, node_id: int, sent: dict[TopicPartition, Sent], max_bytes: int, max_wait_ms: int
    ) -> None:
        unsent = [True]
        try:
            await self._fetch_once(
                node_id, sent, max_bytes, max_wait_ms, use_session=max_wait_ms > 0, unsent=unsent
            )
        except KafkaError as exc:
            self._answers.failed(node_id, sent, exc)
        finally:
            if unsent[0]:
                self._unsent -= 1
            self._nodes_in_flight[node_id] -= 1
            self._in_flight.difference_update(sent)
            self.wake()

    async def _fetch_once(
        self,
        node_id: int,
        sent: dict[TopicPartition, Sent],
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
        wanted = partition_fetches(sent, version, self._config.max_partition_fetch_bytes)
        session: FetchSession | None = None
        if use_session and self._config.fetch_sessions and version >= SESSION_MIN_VERSION:
            session = self._sessions.setdefault(node_id, FetchSession())
            if session.version != version:
                session.reset()
                session.version = version
            plan = session.plan(wanted)
        else:
            plan = SessionPlan(0, FINAL_EPOCH, wanted, (), wanted)
        request = fetch_request(
            plan, version, self._config, max_bytes=max_bytes, max_wait_ms=max_wait_ms, topic_id=store.topic_id
        )
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
        self.stats.answered_in(time.monotonic() - sent_at)
        if session is not None:
            session.on_response(plan, response.error_code, response.session_id)
        if response.error_code:  # a failure like any other (counted by the caller)
            raise error_for_code(response.error_code, f"Fetch from node {node_id}")
        # an answer without records long before max_wait_ms: the broker did not wait for data
        early = max_wait_ms > 0 and time.monotonic() - sent_at < max_wait_ms / 1000 / EARLY_FRACTION
        self._answers.handle(
            node_id, version, sent, response, f"Fetch v{version} from {conn.broker}", early=early
        )

    # --------------------------------------------------------------- draining
    def has_data(self, partitions: set[TopicPartition] | None = None) -> bool:
        return self.buffer.has_data(partitions)

    def drain(
        self, max_records: int, partitions: set[TopicPartition] | None = None
    ) -> dict[TopicPartition, list[Chunk]]:
        """Hand out buffered records, a batch slice at a time (round-robin over partitions);
        positions advance."""
        return self.buffer.drain(max_records, partitions)

    def discard_unassigned(self) -> None:
        self.buffer.discard_unassigned()
        self.replicas.forget(tp for tp in self.replicas.in_use() if not self._subs.is_assigned(tp))

    @property
    def sessions(self) -> dict[int, FetchSession]:
        """KIP-227 sessions per node (their counters are for tests and metrics)."""
        return self._sessions

    def in_flight_partitions(self) -> set[TopicPartition]:
        return set(self._in_flight)


__all__ = ["FetchStats", "Fetcher"]
