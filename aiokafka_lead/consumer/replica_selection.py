"""KIP-392 fetch from follower: which node a partition's next Fetch goes to.

A consumer with ``client_rack`` sends its rack in every Fetch (v11+). A leader whose broker
runs a ``replica.selector.class`` (e.g. ``RackAwareReplicaSelector``) may answer a
partition with ``PreferredReadReplica``: no records, and the node to read it from. The
rules, as Java's consumer applies them:

* the partition is then fetched from that replica, until
  - the replica answers the partition with any error (back to the leader; an
    OFFSET_OUT_OF_RANGE from a follower is not acted on: the leader is asked first, and
    only its answer resets the position),
  - a Fetch to the replica fails (connection lost, timeout): back to the leader, and the
    replica is avoided for a backoff that grows while it keeps failing,
  - the leader's metadata changes (another leader or leader epoch, a KIP-951 hint too),
  - the replica leaves the cluster metadata, or
  - the choice is ``metadata_max_age_ms`` old: the leader then decides again, as its
    ``replica.selector`` sees the cluster now;
* a leader naming a replica the client cannot use is not followed. An unknown one (not in
  the metadata) makes the partition back off and asks for metadata. One being avoided (a
  Fetch to it failed) makes the client ask that leader again at once, without the rack:
  the leader's selector then has no rack to match and serves the partitions itself. Java
  keeps asking with the rack, so its consumer waits until the broker drops the lost
  replica from the ISR (a killed broker: its session timeout); the rack is sent again once
  the replica's backoff ends.
* a leader naming itself, or a replica naming itself, changes nothing.

Counters (``metrics()``): bytes of records fetched per node, the replicas in use, how often
a leader redirected a partition and how often a partition went back to its leader.
"""

from __future__ import annotations

import collections
import enum
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.metadata.model import BrokerNode
from aiokafka_lead.metadata.store import MetadataStore
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)

#: Fetch versions with ``RackId`` in the request and ``PreferredReadReplica`` in the response
RACK_VERSION = 11


class Answer(enum.Enum):
    """What a partition's error-free answer means for where it is fetched next."""

    DATA = "data"  # records (or none yet) from the node asked: accept them
    REDIRECTED = "redirected"  # fetch it from the named replica next, at once
    NOT_FOLLOWED = "not_followed"  # a replica not in the metadata: back off, ask the leader again
    WITHOUT_RACK = "without_rack"  # a replica being avoided: ask the leader at once, rackless


@dataclass(frozen=True, slots=True)
class _Preferred:
    node_id: int
    leader_id: int
    leader_epoch: int
    expires_at: float


class ReadReplicas:
    """The preferred read replica of each partition, and the counters about them."""

    def __init__(
        self,
        store: MetadataStore,
        *,
        expiry_ms: int,
        backoff: ExponentialBackoff,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._expiry_s = expiry_ms / 1000
        self._backoff = backoff
        self._clock = clock
        self._preferred: dict[TopicPartition, _Preferred] = {}
        self._avoid_until: dict[int, float] = {}
        self._node_failures: dict[int, int] = {}
        self._rackless_until: dict[int, float] = {}
        #: bytes of records received per node
        self.bytes_by_node: collections.Counter[int] = collections.Counter()
        #: times a leader named another replica for a partition (and the client followed)
        self.redirects = 0
        #: times a partition went back to its leader, by reason
        self.fallbacks: collections.Counter[str] = collections.Counter()

    # ------------------------------------------------------------ routing
    def node_for(self, tp: TopicPartition, leader: BrokerNode) -> int:
        """The node to fetch ``tp`` from: its preferred read replica while that holds,
        else its leader."""
        chosen = self._preferred.get(tp)
        if chosen is None:
            return leader.node_id
        why = self._invalid(tp, chosen, leader)
        if why is not None:
            self._clear(tp, why)
            return leader.node_id
        return chosen.node_id

    def _invalid(self, tp: TopicPartition, chosen: _Preferred, leader: BrokerNode) -> str | None:
        if leader.node_id != chosen.leader_id or self._store.leader_epoch(tp) != chosen.leader_epoch:
            return "leader changed"
        if self._clock() >= chosen.expires_at:
            return "expired"
        if self._store.node(chosen.node_id) is None:
            return "replica not in metadata"
        if self._avoided(chosen.node_id):
            return "replica unreachable"
        return None

    def _avoided(self, node_id: int) -> bool:
        return self._avoid_until.get(node_id, 0.0) > self._clock()

    def _clear(self, tp: TopicPartition, reason: str) -> None:
        chosen = self._preferred.pop(tp, None)
        if chosen is not None:
            self.fallbacks[reason] += 1
            log.debug(
                "%s-%d: back to its leader from replica %d (%s)",
                tp.topic,
                tp.partition,
                chosen.node_id,
                reason,
            )

    def send_rack(self, node_id: int) -> bool:
        """Whether a Fetch to ``node_id`` carries the client's rack: not while a replica it
        named is being avoided."""
        return self._rackless_until.get(node_id, 0.0) <= self._clock()

    def is_preferred(self, tp: TopicPartition, node_id: int) -> bool:
        chosen = self._preferred.get(tp)
        return chosen is not None and chosen.node_id == node_id

    # ------------------------------------------------------------ answers
    def on_answer(
        self, tp: TopicPartition, node_id: int, preferred: int, leader_epoch: int, nbytes: int
    ) -> Answer:
        """An error-free answer for ``tp`` from ``node_id`` to a Fetch sent with
        ``leader_epoch``; ``preferred`` is its PreferredReadReplica (-1: none)."""
        self._node_failures.pop(node_id, None)
        self.bytes_by_node[node_id] += nbytes
        if preferred < 0 or preferred == node_id:
            return Answer.DATA
        if self._store.node(preferred) is None:
            self.fallbacks["named replica unknown"] += 1
            self._store.request_refresh(f"preferred read replica {preferred} not in metadata")
            return Answer.NOT_FOLLOWED
        if self._avoided(preferred):
            self.fallbacks["named replica unreachable"] += 1
            if not self.send_rack(node_id):
                return Answer.NOT_FOLLOWED  # named even without the rack: back off
            until = self._avoid_until[preferred]
            self._rackless_until[node_id] = max(self._rackless_until.get(node_id, 0.0), until)
            return Answer.WITHOUT_RACK
        leader = self._store.leader_for(tp)
        if leader is None:
            return Answer.NOT_FOLLOWED
        expires = self._clock() + self._expiry_s
        self._preferred[tp] = _Preferred(preferred, leader.node_id, leader_epoch, expires)
        self.redirects += 1
        log.debug("%s-%d: node %d names replica %d to read from", tp.topic, tp.partition, node_id, preferred)
        return Answer.REDIRECTED

    def on_error(self, tp: TopicPartition, node_id: int, error_name: str) -> bool:
        """An error for ``tp`` from ``node_id``: True when that node was its preferred
        replica (the next Fetch goes to the leader)."""
        if not self.is_preferred(tp, node_id):
            return False
        self._clear(tp, error_name)
        return True

    def on_fetch_failed(self, node_id: int, tps: Iterable[TopicPartition]) -> set[TopicPartition]:
        """A Fetch to ``node_id`` failed as a whole: if it was a preferred replica, its
        partitions go back to their leaders (returned) and the node is avoided for a while."""
        moved = {tp for tp in tps if self.is_preferred(tp, node_id)}
        if not moved:
            return moved
        failures = self._node_failures.get(node_id, 0)
        self._node_failures[node_id] = failures + 1
        self._avoid_until[node_id] = self._clock() + self._backoff.delay_s(failures)
        for tp in moved:
            self._clear(tp, "fetch failed")
        return moved

    def forget(self, tps: Iterable[TopicPartition]) -> None:
        """Partitions no longer assigned."""
        for tp in tps:
            self._preferred.pop(tp, None)

    # ------------------------------------------------------------ metrics
    def in_use(self) -> dict[TopicPartition, int]:
        """Partitions read from a replica other than their leader, and that replica."""
        return {tp: p.node_id for tp, p in self._preferred.items()}

    def metrics(self) -> dict[str, Any]:
        return {
            "bytes_fetched_by_node": dict(self.bytes_by_node),
            "preferred_read_replicas": self.in_use(),
            "read_replica_redirects": self.redirects,
            "read_replica_fallbacks": dict(self.fallbacks),
        }


__all__ = ["RACK_VERSION", "Answer", "ReadReplicas"]
