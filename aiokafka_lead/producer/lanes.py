"""Which connection ("lane") the sender uses for a node, and when a node counts as busy.

A broker reads one request per connection at a time: while an acks=all produce waits in its
purgatory for the followers, every later request on that connection waits too, whatever
partitions it carries. Around a leader move that request can be parked for hundreds of ms
(the new leader's followers are still re-pointing their fetchers; docs/kip-951.md), and the
partitions that just moved to the broker, or that are unaffected, would queue behind it.

Two connections are opt-in (``connections_per_broker=2``; the default is 1): in the
leader-move benchmark with Kafka's default brokers on loopback, two connections stall for
1-2 s in more runs than one connection does. A traced stall was the followers' (a follower
re-pointing its fetcher in 0.5 s waves, docs/kip-951.md); why two connections meet it more
often is not known.

One connection (the default; DESIGN.md invariant 24): requests to a node are pipelined on
it, up to ``max_in_flight``, when the node is far: its fastest recent request took at
least ``PIPELINE_FLOOR_S``. Then natural batching (invariant 10) holds new, non-full
batches only while the node's newest request is younger than the overdue threshold below
(floor ``MIN_PIPELINE_S``), and the next request goes out while the previous one is still
on the wire or in the broker, instead of leaving the link idle for a round trip. A
partition may have several batches out (``pipelining()``) only if the link is far too: the
connection's ApiVersions exchange took at least ``ROUND_TRIP_FLOOR_S``. To a near node
(loopback) one request is out at a time, and a partition has one batch out.

Two connections (``connections_per_broker=2``), rules (DESIGN.md invariant 22):
- lane 0 is the node's usual connection; a request goes there when lane 0 is idle,
  otherwise on lane 1;
- natural batching (invariant 10) holds new, non-full batches while the node is busy: lane 0
  has a request out that is not yet overdue, or both lanes do;
- a lane-0 request out for longer than ``OVERDUE_FACTOR`` times the node's recent (EWMA)
  produce latency, and at least ``MIN_OVERDUE_S``, is overdue: the next request goes on
  lane 1 instead of waiting behind it. That passes a request parked in purgatory, and on a
  real network (round trips of milliseconds) it lets the next request overlap the first
  one's round trip instead of leaving the link idle; on loopback a request is answered
  within the minimum and nothing changes;
- retries (the KIP-951 immediate ones included) wait for natural batching only while both
  lanes are out, so with lane 0 out they go on lane 1 at once (with one connection they
  wait for a near node's request: accumulator.drain);
- in a transaction, a partition's first batch (until one is acknowledged) goes on lane 0
  only: the broker checks that partition with the transaction coordinator before writing
  it, one check per transactional id at a time, and a second request needing a check for
  the same transactional id while the first waits makes the broker fail the first
  (NOT_ENOUGH_REPLICAS, "Unable to verify the partition has been added to the
  transaction. Underlying error: NETWORK_EXCEPTION"), which costs a retry backoff. One
  connection serializes them, as a single-connection client's do.
"""

from __future__ import annotations

import collections
import logging
import math
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

MIN_OVERDUE_S = 0.02
# One connection: the floor before the next request is pipelined behind the newest. On the
# kip-conditions network (10 ms round trip) 10 ms gave a p50 of 35 ms where 20 ms gave 45 ms;
# on loopback requests are answered faster and nothing changes.
MIN_PIPELINE_S = 0.01
# ... and only to a node whose fastest recent request (of the last FLOOR_SAMPLES) took at
# least PIPELINE_FLOOR_S, i.e. a link with a round trip worth overlapping. On loopback
# (floor ~1 ms) pipelining behind a request parked by a leader move split the backlog into
# requests that each waited for the followers: p99.9 206 ms against 112 ms without it
# (fast-followers brokers, 3 runs). A leader move can still make the last 32 requests slow
# and turn pipelining on for its duration on loopback; a window of 10 s instead (no
# pipelining at moves) made loopback-defaults worse (p99.9 175 ms against 119, 5 runs
# each), so the 32 requests stay.
PIPELINE_FLOOR_S = 0.005
# A produce request's latency is the network's round trip plus the broker's own wait: at
# acks=all the followers' next fetches, ~5 ms on loopback with Kafka's default brokers, so
# under load a node on loopback counts as far. Requests of different partitions pipelined to
# it keep a saturated broker busy (load A ran at 0.82x the rate without them), but a
# partition's own batches pipelined to it only split its backlog into small batches, each a
# request of its own, and after a leader move they are retried one request after another,
# each waiting for the followers (a traced move: 4 batches of a partition, answered ~10 ms
# apart). So a partition keeps one batch out unless its leader's connection's ApiVersions
# exchange, which a broker answers without waiting, also took at least this long (a node
# without one yet: the produce latency alone decides). On loopback that first exchange of a
# connection took 2-5.5 ms on a loaded 2-core machine; through the kip-conditions link
# (5 +- 1 ms each way) at least 8 ms.
ROUND_TRIP_FLOOR_S = 0.006
FLOOR_SAMPLES = 32
OVERDUE_FACTOR = 0.5
CLIP_FACTOR = 4.0  # samples above CLIP_FACTOR x EWMA count as that much
EWMA_WEIGHT = 0.2


@dataclass(slots=True)
class _Lane:
    started: collections.deque[float] = field(default_factory=collections.deque)  # in-flight send times


@dataclass(slots=True)
class _Node:
    lanes: tuple[_Lane, _Lane] = field(default_factory=lambda: (_Lane(), _Lane()))
    ewma_s: float | None = None
    recent: collections.deque[float] = field(default_factory=lambda: collections.deque(maxlen=FLOOR_SAMPLES))
    floor_s: float = 0.0  # the fastest of ``recent``
    round_trip_s: float | None = None  # its connection's ApiVersions exchange

    @property
    def far(self) -> bool:
        """A round trip worth overlapping: requests to the node are pipelined."""
        return self.floor_s >= PIPELINE_FLOOR_S

    @property
    def pipelines_partitions(self) -> bool:
        """Far, and across a far link: a partition may have several batches out to it."""
        if self.round_trip_s is not None and self.round_trip_s < ROUND_TRIP_FLOOR_S:
            return False
        return self.far


class NodeLanes:
    def __init__(self, lanes: int = 1, *, max_in_flight: int = 5) -> None:
        """``lanes=1``: one connection per node, requests pipelined on it (module doc)."""
        self._nodes: dict[int, _Node] = {}
        self._single = lanes == 1
        self._max_in_flight = max_in_flight
        # the nodes whose ``pipelines_partitions`` is true, kept up to date (read every pass)
        self._pipelining: set[int] = set()

    def _node(self, node_id: int) -> _Node:
        node = self._nodes.get(node_id)
        if node is None:
            node = self._nodes[node_id] = _Node()
            if node.pipelines_partitions:  # with floors of 0 every node is far from the start
                self._pipelining.add(node_id)
        return node

    def overdue_after_s(self, node_id: int) -> float:
        floor = MIN_PIPELINE_S if self._single else MIN_OVERDUE_S
        ewma = self._node(node_id).ewma_s
        return floor if ewma is None else max(floor, OVERDUE_FACTOR * ewma)

    def holds(self, now: float) -> dict[int, float]:
        """The nodes natural batching must wait for, each with when the wait ends (monotonic
        time; ``math.inf``: when one of its requests ends, which wakes the sender)."""
        holds: dict[int, float] = {}
        for node_id in self._nodes:
            until = self.hold_of(node_id, now)
            if until is not None:
                holds[node_id] = until
        return holds

    def hold_of(self, node_id: int, now: float) -> float | None:
        """:meth:`holds` for one node: None when natural batching need not wait for it."""
        node = self._node(node_id)
        first, second = node.lanes
        if not first.started:
            return None
        if self._single:  # pipelining: the newest request decides
            if not node.far or len(first.started) >= self._max_in_flight:
                return math.inf
            started = first.started[-1]
        elif second.started:
            return math.inf
        else:
            started = first.started[0]
        until = started + self.overdue_after_s(node_id)
        return until if now < until else None

    def pipelining(self) -> set[int]:
        """Nodes a partition may have several batches in flight to (one connection, a far
        link): the lanes' own set, to read, not to change."""
        if not self._single:
            return set()  # two connections to a node: a later request could be read first
        return self._pipelining

    def lane0_out(self) -> set[int]:
        """Nodes whose lane 0 has a request out (none with one lane: there the broker
        serializes every request anyway)."""
        if self._single:
            return set()
        return {node_id for node_id, node in self._nodes.items() if node.lanes[0].started}

    def lane_for(self, node_id: int) -> int:
        return 1 if not self._single and self._node(node_id).lanes[0].started else 0

    def begin(self, node_id: int, lane: int, now: float) -> None:
        self._node(node_id).lanes[lane].started.append(now)

    def round_trip(self, node_id: int, seconds: float | None) -> None:
        """The node's lane-0 connection's ApiVersions exchange took ``seconds`` (None: not
        known); a new connection brings a new one."""
        node = self._node(node_id)
        if node.round_trip_s != seconds:
            before = (node.far, node.pipelines_partitions)
            node.round_trip_s = seconds
            self._update_pipelining(node_id, node, before)

    def _update_pipelining(self, node_id: int, node: _Node, before: tuple[bool, bool]) -> None:
        now = (node.far, node.pipelines_partitions)
        if now[1]:
            self._pipelining.add(node_id)
        else:
            self._pipelining.discard(node_id)
        if now != before:
            log.debug(
                "node %d: requests %s, a partition's batches %s (the fastest of its last %d "
                "produce requests took %.1f ms, its connection's ApiVersions exchange %s)",
                node_id,
                "pipelined" if now[0] else "one at a time",
                "pipelined" if now[1] else "one at a time",
                len(node.recent),
                node.floor_s * 1000,
                "(none yet)" if node.round_trip_s is None else f"{node.round_trip_s * 1000:.1f} ms",
            )

    def end(self, node_id: int, lane: int, started: float, latency_s: float | None) -> None:
        """A request sent at ``started`` finished; ``latency_s`` when it got a response."""
        node = self._node(node_id)
        node.lanes[lane].started.remove(started)
        if latency_s is not None and lane == 0:
            recent = node.recent
            evicted = recent[0] if len(recent) == FLOOR_SAMPLES else math.inf
            recent.append(latency_s)
            floor = node.floor_s
            if len(recent) == 1 or latency_s < floor:
                floor = latency_s
            elif evicted <= floor:  # the fastest left the window
                floor = min(recent)
            if floor != node.floor_s:
                before = (node.far, node.pipelines_partitions)
                node.floor_s = floor
                self._update_pipelining(node_id, node, before)
            if node.ewma_s is None:
                node.ewma_s = latency_s
            else:  # a parked request must not raise the bar for spotting the next one
                sample = min(latency_s, CLIP_FACTOR * node.ewma_s)
                node.ewma_s = (1 - EWMA_WEIGHT) * node.ewma_s + EWMA_WEIGHT * sample
