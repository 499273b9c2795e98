"""The epoch-guarded MetadataStore: one per client, the only source of cluster state.

Rules (KIP-951, KIP-320; docs/DESIGN.md "non-obvious invariants"):

* A Metadata response never regresses a partition's leader epoch. An equal epoch is
  accepted (it refreshes ISR and replicas); a changed topic id resets the topic; Metadata
  below v9 carries no reliable epochs and is accepted as it is, leaving the epoch unknown.
* A lower epoch seen ``stale_accept_count`` times in a row, over at least
  ``stale_accept_after_s`` seconds, is accepted with a warning (an unclean recovery must
  not strand the client). The time bound keeps a burst of expedited refreshes against a
  lagging broker from reverting a fresh leader.
* A KIP-951 hint is applied only if leader_id >= 0, leader_epoch >= 0, the partition is
  known, the leader node is known or listed in NodeEndpoints, and the epoch is STRICTLY
  greater than the known one. Only hinted partitions change; endpoints of applied hints
  add or update nodes, never remove any.
* Every hint response asks for an expedited refresh, applied or not; nobody waits for it.
* What no real broker sends is refused (``checks.py``): a node with an impossible id, host
  or port is left out (its partitions have no usable leader); a topic whose partitions are
  not numbered 0..N-1 is dropped and unusable until a good answer comes (its problem is
  kept for the timeout error); topics nobody asked for are ignored. Other topics and nodes
  of the same answer are applied as usual.

Mutators are synchronous and never await, so state is consistent without locks; the one
exception is :meth:`MetadataStore.apply_metadata_sliced`, which merges a huge answer giving
the event loop a turn now and then:

* Merges run one at a time (a lock) and each completes even if its caller is cancelled;
  between slices, hints and readers run. Every partition is still merged under the epoch
  rules against what the store holds at that moment.
* A topic becomes visible (``partitions_for_topic``, ``topics``) only once all its
  partitions are in, so nobody partitions records over half a topic. Listeners hear of the
  merge once, at its end.
"""

from __future__ import annotations

import collections
import logging
import time
import uuid
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Final

import anyio

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.metadata.checks import node_problem, partitions_problem
from aiokafka_lead.metadata.model import (
    NO_EPOCH,
    NO_LEADER,
    ZERO_UUID,
    BrokerNode,
    HintOutcome,
    LeaderHint,
    MetadataChange,
    MetadataSnapshot,
    PartitionMetadata,
    PartitionRow,
    TopicMetadata,
)
from aiokafka_lead.ratelog import RateLimitedLog
from aiokafka_lead.slices import run_in_slices, run_to_end
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)


Listener = Callable[[MetadataChange], None]

#: partitions a merge handles between two chances to give the event loop a turn
_STEP = 512

#: where a row holds the leader and its epoch (model.PartitionRow)
_LEADER: Final = 1
_EPOCH: Final = 2

#: a step of a merge: a generator that yields now and then (a chance to give the loop a turn)
_Steps = Generator[None, None, None]


@dataclass(slots=True)
class _StaleRun:
    epoch: int
    count: int
    first_seen: float


@dataclass(frozen=True, slots=True)
class _TopicState:
    topic_id: uuid.UUID
    is_internal: bool
    partition_count: int


def _recreated(known: uuid.UUID, seen: uuid.UUID) -> bool:
    """A different non-zero topic id under the same name: the topic was deleted and made again."""
    return ZERO_UUID not in (known, seen) and known != seen


class MetadataStore:
    """Cluster state shared by the producer's sender, the fetcher and the admin client."""

    def __init__(
        self,
        *,
        stale_accept_count: int = 5,
        stale_accept_after_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stale_accept_count = stale_accept_count
        self._stale_accept_after_s = stale_accept_after_s
        self._clock = clock
        self._nodes: dict[int, BrokerNode] = {}
        #: (topic, partition) -> its row: plain tuples, which the garbage collector stops
        #: tracking (model.py); a TopicPartition looks its row up as it is
        self._partitions: dict[tuple[str, int], PartitionRow] = {}
        self._topics: dict[str, _TopicState] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}
        self._topic_errors: dict[str, int] = {}
        self._topic_error_sources: dict[str, str] = {}
        self._topic_problems: dict[str, str] = {}  # topic -> why its last description was refused
        self._leaderless: dict[str, int] = {}  # topic -> partitions without a usable leader
        self._warn = RateLimitedLog(log)
        self._stale: dict[tuple[str, int], _StaleRun] = {}
        self._listeners: list[Listener] = []
        self.version = 0  #: bumped by every mutation that changed something
        self._partition_ids: dict[str, set[int]] = {}  # topic -> ids of its partitions held
        #: topic -> leader id -> how many of its partitions that node leads
        self._leader_counts: dict[str, collections.Counter[int]] = {}
        self._merging = anyio.Lock()
        self._changed: anyio.Event | None = None
        self._refresh_reasons: list[str] = []
        self._refresh_wanted: anyio.Event | None = None
        self.controller_id = -1
        self.cluster_id: str | None = None
        self.last_refresh: float | None = None
        self.hint_outcomes: collections.Counter[HintOutcome] = collections.Counter()
        self.refresh_requests: collections.Counter[str] = collections.Counter()
        self.stale_metadata_ignored = 0

    # ------------------------------------------------------------------ queries
    @property
    def has_metadata(self) -> bool:
        return self.last_refresh is not None

    def node(self, node_id: int) -> BrokerNode | None:
        return self._nodes.get(node_id)

    def nodes(self) -> list[BrokerNode]:
        return list(self._nodes.values())

    def partition(self, tp: TopicPartition) -> PartitionMetadata | None:
        row = self._partitions.get(tp)
        return None if row is None else PartitionMetadata(tp[0], *row)

    def leader_epoch(self, tp: TopicPartition) -> int:
        row = self._partitions.get(tp)
        return -1 if row is None else row[_EPOCH]

    def leader_for(self, tp: tuple[str, int]) -> BrokerNode | None:
        """The leader's node, or None when the leader or its address is unknown."""
        row = self._partitions.get(tp)
        if row is None or row[_LEADER] == NO_LEADER:
            return None
        return self._nodes.get(row[_LEADER])

    def topics(self) -> set[str]:
        return set(self._topics)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        if topic not in self._topics:
            return None
        return set(self._partition_ids.get(topic, ()))

    def available_partitions(self, topic: str) -> list[int]:
        """The topic's partitions whose leader is known and usable, in order (what a
        partitioner picks from). Counts of partitions per leader keep it cheap for a topic
        of a million partitions, unless some leader is unusable."""
        ids = self._partition_ids.get(topic)
        if topic not in self._topics or not ids:
            return []
        counts = self._leader_counts.get(topic, collections.Counter())
        unusable = {n for n, c in counts.items() if c and (n == NO_LEADER or n not in self._nodes)}
        if not unusable:
            return self.partition_list(topic)
        return sorted(p for p in ids if self._partitions[(topic, p)][_LEADER] not in unusable)

    def partition_list(self, topic: str) -> list[int]:
        """The topic's partition ids in order ([] if the topic is unknown)."""
        ids = self._partition_ids.get(topic)
        state = self._topics.get(topic)
        if ids is None or state is None:
            return []
        if len(ids) == state.partition_count:  # all of 0..N-1: no sort of a million
            return list(range(state.partition_count))
        return sorted(ids)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        state = self._topics.get(topic)
        return None if state is None or state.topic_id == ZERO_UUID else state.topic_id

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self._names_by_id.get(topic_id)

    def topic_error(self, topic: str) -> int:
        """The error code the last Metadata response gave for this topic (0 if none)."""
        return self._topic_errors.get(topic, 0)

    def topic_error_source(self, topic: str) -> str:
        """The broker whose Metadata answer gave the topic's error (for error messages)."""
        return self._topic_error_sources.get(topic, "the cluster")

    def topic_problem(self, topic: str) -> str | None:
        """Why the last description of this topic was refused (None if it was not)."""
        return self._topic_problems.get(topic)

    def is_internal(self, topic: str) -> bool:
        state = self._topics.get(topic)
        return state is not None and state.is_internal

    # ------------------------------------------------------------ notifications
    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` synchronously after every effective change."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    async def wait_for_change(self, since_version: int) -> int:
        """Return once :attr:`version` differs from ``since_version``."""
        while self.version == since_version:
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()
        return self.version

    def _publish(self, change: MetadataChange) -> None:
        if not change:
            return
        self.version += 1
        log.debug("metadata changed (%s): %s", change.reason, change)
        if self._changed is not None:
            self._changed.set()
            self._changed = None
        for listener in list(self._listeners):
            listener(change)

    # ------------------------------------------------------------ refresh asks
    def request_refresh(self, reason: str) -> None:
        """Ask the background refresher for an expedited Metadata request (never awaited)."""
        self.refresh_requests[reason.split(":", 1)[0]] += 1
        self._refresh_reasons.append(reason)
        log.debug("metadata refresh requested: %s", reason)
        if self._refresh_wanted is not None:
            self._refresh_wanted.set()

    @property
    def refresh_pending(self) -> bool:
        return bool(self._refresh_reasons)

    def take_refresh_reasons(self) -> list[str]:
        """Hand the pending reasons to the refresher and clear them."""
        reasons, self._refresh_reasons = self._refresh_reasons, []
        return reasons

    async def wait_refresh_requested(self) -> None:
        """Return when an expedited refresh is pending."""
        while not self._refresh_reasons:
            if self._refresh_wanted is None:
                self._refresh_wanted = anyio.Event()
            await self._refresh_wanted.wait()
            self._refresh_wanted = None

    # -------------------------------------------------------- metadata response
    def apply_metadata(self, snapshot: MetadataSnapshot, reason: str = "metadata") -> MetadataChange:
        """Merge a Metadata response under the epoch rules; return what changed."""
        return run_to_end(self._merge(snapshot, reason))

    async def apply_metadata_sliced(
        self, snapshot: MetadataSnapshot, reason: str = "metadata"
    ) -> MetadataChange:
        """:meth:`apply_metadata`, giving the event loop a turn every few milliseconds (a
        topic of a million partitions takes seconds to merge); one merge at a time. A merge
        once begun completes, cancelled or not: half of one would change partitions without
        telling the listeners, and the next answer, equal to them, would not either."""
        with anyio.CancelScope(shield=True):
            async with self._merging:
                change = await run_in_slices(self._merge(snapshot, reason))
        return change

    def _merge(self, snapshot: MetadataSnapshot, reason: str) -> Generator[None, None, MetadataChange]:
        change = MetadataChange(reason=reason)
        self.last_refresh = self._clock()
        lagging = snapshot.epochs_reliable and (yield from self._is_lagging(snapshot))
        if snapshot.controller_id >= 0:
            self.controller_id = snapshot.controller_id
        if snapshot.cluster_id is not None:
            self.cluster_id = snapshot.cluster_id
        seen: set[str] = set()
        requested = snapshot.requested_topics
        for topic in snapshot.topics:
            if requested is not None and topic.name not in requested:
                continue  # nobody asked: keeping it would cost memory for nothing
            seen.add(topic.name)
            yield from self._merge_topic(topic, snapshot, change)
        if requested is None:
            for name in list(self._topics):
                if name not in seen:
                    self._drop_topic(name, change)
        brokers = self._usable_nodes(snapshot.brokers, snapshot.source, "Brokers")
        if brokers:
            yield from self._merge_nodes(brokers, change, lagging=lagging)
        yield from self._warn_leaderless(snapshot, seen)
        self._publish(change)
        return change

    def _warn_leaderless(self, snapshot: MetadataSnapshot, seen: set[str]) -> _Steps:
        """One WARNING (rate-limited) per topic whose partitions stay without a usable leader
        in two answers in a row (a new topic's first answer often has none yet)."""
        for topic in snapshot.topics:
            name = topic.name
            if name not in seen or name not in self._topics:
                continue
            missing = []
            for i, row in enumerate(topic.rows):
                if self.leader_for((name, row[0])) is None:
                    missing.append(row[0])
                if i % _STEP == _STEP - 1:
                    yield
            key = ("no leader", name)
            if not missing:
                if self._leaderless.pop(name, None) is not None:
                    self._warn.clear(key)
                continue
            if name in self._leaderless:
                shown = ", ".join(map(str, sorted(missing)[:10])) + (", ..." if len(missing) > 10 else "")
                self._warn.warning(
                    key,
                    "%s: topic %r: %d partition(s) without a usable leader (%s): no leader elected, "
                    "or the leader is not among the usable brokers; their records wait",
                    snapshot.source,
                    name,
                    len(missing),
                    shown,
                )
            self._leaderless[name] = len(missing)

    def _is_lagging(self, snapshot: MetadataSnapshot) -> Generator[None, None, bool]:
        """True if the response knows an older leader epoch than we do for any partition."""
        for topic in snapshot.topics:
            for i, row in enumerate(topic.rows):
                cur = self._partitions.get((topic.name, row[0]))
                if cur is not None and 0 <= row[_EPOCH] < cur[_EPOCH]:
                    return True
                if i % _STEP == _STEP - 1:
                    yield
        return False

    def _merge_nodes(self, brokers: Iterable[BrokerNode], change: MetadataChange, *, lagging: bool) -> _Steps:
        """A full response replaces the node list, except that a node still leading a known
        partition is kept; a lagging response (older epochs than ours) may only add nodes,
        so it cannot undo an address just learned from KIP-951 NodeEndpoints."""
        fresh = {b.node_id: b for b in brokers}
        for node_id, node in fresh.items():
            if lagging and node_id in self._nodes:
                continue
            if self._nodes.get(node_id) != node:
                change.nodes_changed.add(node_id)
                self._nodes[node_id] = node
        gone = set(self._nodes) - set(fresh)
        if lagging or not gone:
            return
        for i, row in enumerate(list(self._partitions.values())):
            gone.discard(row[_LEADER])
            if i % _STEP == _STEP - 1:
                yield
        for node_id in gone:
            if node_id in self._nodes:
                del self._nodes[node_id]
                change.nodes_removed.add(node_id)

    def _usable_nodes(self, nodes: Iterable[BrokerNode], source: str, field: str) -> list[BrokerNode]:
        """The nodes whose id, host and port can be used; the others are logged and left out."""
        usable = []
        for node in nodes:
            problem = node_problem(node.node_id, node.host, node.port)
            if problem is None:
                usable.append(node)
                continue
            self._warn.warning(
                ("node", node.node_id, node.host, node.port),
                "%s: %s %s; that node is ignored (its partitions have no usable leader)",
                source,
                field,
                problem,
            )
        return usable

    def _merge_topic(
        self, topic: TopicMetadata, snapshot: MetadataSnapshot, change: MetadataChange
    ) -> _Steps:
        name = topic.name
        reliable = snapshot.epochs_reliable
        in_order = True  # as brokers list them: then no list of indexes is needed to check
        for i, row in enumerate(topic.rows):
            if row[0] != i:
                in_order = False
                break
            if i % _STEP == _STEP - 1:
                yield
        problem = None
        if not topic.error_code and not (in_order and topic.rows):
            problem = partitions_problem(row[0] for row in topic.rows)
        if problem is not None:
            why = f"{snapshot.source}: topic {name!r} {problem}"
            self._topic_problems[name] = why
            self._warn.warning(
                ("topic", name), "%s; the topic is unusable until a valid answer comes", why
            )
            self._drop_topic(name, change)
            self.request_refresh(f"invalid metadata: topic {name}")
            return
        if self._topic_problems.pop(name, None) is not None:
            self._warn.clear(("topic", name))
            log.info("%s: topic %r is described validly again", snapshot.source, name)
        if topic.error_code:
            self._topic_errors[name] = topic.error_code
            self._topic_error_sources[name] = snapshot.source
            if topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                self._drop_topic(name, change)
            elif topic.error_code == ErrorCode.LEADER_NOT_AVAILABLE:
                self.request_refresh(f"leader not available: topic {name}")
            return
        self._topic_errors.pop(name, None)
        self._topic_error_sources.pop(name, None)
        current = self._topics.get(name)
        if current is not None and _recreated(current.topic_id, topic.topic_id):
            log.info("topic %s was recreated (topic id changed); resetting its state", name)
            self._drop_topic(name, change)
            current = None
        if current is None:
            change.topics_added.add(name)
        topic_id = (
            topic.topic_id
            if topic.topic_id != ZERO_UUID
            else (current.topic_id if current is not None else ZERO_UUID)
        )
        for i, row in enumerate(topic.rows):
            self._merge_partition(name, row, reliable, change)
            if i % _STEP == _STEP - 1:
                yield
        # last, so the topic shows whole (a sliced merge lets readers in between)
        count = len(topic.rows)  # numbered 0..N-1 (checked above)
        current = self._topics.get(name)
        if current is not None:
            count = max(count, current.partition_count)
        self._topics[name] = _TopicState(topic_id, topic.is_internal, count)
        if topic_id != ZERO_UUID:
            self._names_by_id[topic_id] = name

    def _merge_partition(self, topic: str, new: PartitionRow, reliable: bool, change: MetadataChange) -> None:
        key = (topic, new[0])
        cur = self._partitions.get(key)
        if not reliable:
            new = (new[0], new[_LEADER], NO_EPOCH, new[3], new[4], new[5], new[6])
        elif (
            cur is not None
            and 0 <= new[_EPOCH] < cur[_EPOCH]
            and not self._accept_lower_epoch(key, new[_EPOCH], cur[_EPOCH])
        ):
            return
        self._stale.pop(key, None)
        if new != cur:  # an unchanged partition keeps its row: no garbage per refresh
            self._set_row(key, cur, new)
        if cur is None or (cur[_LEADER], cur[_EPOCH]) != (new[_LEADER], new[_EPOCH]):
            change.leaders_changed.add(key)
        if new[_LEADER] == NO_LEADER:
            self.request_refresh(f"no leader: {topic}-{new[0]}")

    def _set_row(self, key: tuple[str, int], cur: PartitionRow | None, new: PartitionRow) -> None:
        """Hold ``new`` for ``key`` (``cur`` before it), and the indexes derived from rows."""
        self._partitions[key] = new
        if cur is None:
            self._partition_ids.setdefault(key[0], set()).add(key[1])
        counts = self._leader_counts.get(key[0])
        if counts is None:
            counts = self._leader_counts[key[0]] = collections.Counter()
        if cur is not None:
            counts[cur[_LEADER]] -= 1
        counts[new[_LEADER]] += 1

    def _accept_lower_epoch(self, tp: tuple[str, int], epoch: int, known: int) -> bool:
        now = self._clock()
        run = self._stale.get(tp)
        if run is None or run.epoch != epoch:
            run = self._stale[tp] = _StaleRun(epoch, 0, now)
        run.count += 1
        if run.count >= self._stale_accept_count and now - run.first_seen >= self._stale_accept_after_s:
            log.warning(
                "accepting lower leader epoch %d < %d for %s-%d after %d responses in a row "
                "(unclean recovery?)",
                epoch,
                known,
                tp[0],
                tp[1],
                run.count,
            )
            return True
        self.stale_metadata_ignored += 1
        log.debug("ignoring stale metadata for %s-%d: epoch %d < %d", tp[0], tp[1], epoch, known)
        return False

    def _drop_topic(self, name: str, change: MetadataChange) -> None:
        state = self._topics.pop(name, None)
        if state is None:
            return
        change.topics_removed.add(name)
        if state.topic_id != ZERO_UUID and self._names_by_id.get(state.topic_id) == name:
            del self._names_by_id[state.topic_id]
        self._leader_counts.pop(name, None)
        for partition in self._partition_ids.pop(name, ()):
            tp = (name, partition)
            del self._partitions[tp]
            self._stale.pop(tp, None)
            change.leaders_changed.add(tp)

    # ------------------------------------------------------------ KIP-951 hints
    def apply_leader_hints(
        self,
        hints: Iterable[LeaderHint],
        endpoints: Iterable[BrokerNode] = (),
        reason: str = "leader hint",
    ) -> dict[TopicPartition, HintOutcome]:
        """Apply KIP-951 CurrentLeader/NodeEndpoints from a Produce or Fetch response.

        Always requests an expedited refresh beside it (hint or not); returns the
        outcome per hinted partition so callers can tell whether the epoch advanced.
        """
        listed = {n.node_id: n for n in self._usable_nodes(endpoints, reason, "NodeEndpoints")}
        change = MetadataChange(reason=reason)
        outcomes: dict[TopicPartition, HintOutcome] = {}
        for hint in hints:
            outcome = self._apply_hint(hint, listed, change)
            outcomes[hint.tp] = outcome
            self.hint_outcomes[outcome] += 1
            log.debug("leader hint %s (%s): %s", hint, reason, outcome.value)
        self.request_refresh(f"{reason}: {len(outcomes)} partition(s)")
        self._publish(change)
        return outcomes

    def _apply_hint(
        self, hint: LeaderHint, listed: dict[int, BrokerNode], change: MetadataChange
    ) -> HintOutcome:
        if hint.leader_id < 0 or hint.leader_epoch < 0:
            return HintOutcome.INVALID
        key = (hint.topic, hint.partition)
        cur = self._partitions.get(key)
        if cur is None:
            return HintOutcome.UNKNOWN_PARTITION
        if hint.leader_id not in self._nodes and hint.leader_id not in listed:
            return HintOutcome.UNKNOWN_NODE
        if hint.leader_epoch <= cur[_EPOCH]:
            return HintOutcome.STALE_EPOCH
        self._set_row(key, cur, (cur[0], hint.leader_id, hint.leader_epoch, cur[3], cur[4], cur[5], 0))
        self._stale.pop(key, None)
        change.leaders_changed.add(key)
        node = listed.get(hint.leader_id)
        if node is not None and self._nodes.get(node.node_id) != node:
            self._nodes[node.node_id] = node
            change.nodes_changed.add(node.node_id)
        return HintOutcome.APPLIED
