"""Immutable cluster-state records kept by the MetadataStore.

They are plain values, decoupled from the wire classes: the refresher converts a
MetadataResponse into a :class:`MetadataSnapshot`, the producer and fetcher turn the
KIP-951 fields of their responses into :class:`LeaderHint` and :class:`BrokerNode`.

A partition travels and is kept as a :data:`PartitionRow`, a plain tuple of ints and tuples
of ints: the garbage collector stops tracking such tuples, so a topic of a million
partitions costs its collections nothing (an object per partition made each full collection
walk millions of them, holding the event loop for most of a second).
:class:`PartitionMetadata` is built from a row when someone asks for one partition.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from aiokafka_lead.structs import TopicPartition

NO_LEADER = -1
NO_EPOCH = -1
ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class PartitionValue:
    """A value about one partition: its ``topic`` and ``partition`` (first, in that order)
    and their ``tp``."""

    topic: str
    partition: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class BrokerNode:
    """A broker's identity and address (Metadata ``Brokers`` / KIP-951 ``NodeEndpoints``)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)


#: one partition of a Metadata answer: (partition, leader_id, leader_epoch, replica_nodes,
#: isr_nodes, offline_replicas, error_code), the fields of :class:`PartitionMetadata` after
#: its topic, in that order
PartitionRow = tuple[int, int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...], int]


@dataclass(frozen=True, slots=True)
class PartitionMetadata(PartitionValue):
    """One partition's leadership, as last accepted by the store."""

    leader_id: int
    leader_epoch: int
    replica_nodes: tuple[int, ...] = ()
    isr_nodes: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0

    @property
    def row(self) -> PartitionRow:
        return (
            self.partition,
            self.leader_id,
            self.leader_epoch,
            self.replica_nodes,
            self.isr_nodes,
            self.offline_replicas,
            self.error_code,
        )


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A topic as one Metadata response described it, its partitions as rows."""

    name: str
    topic_id: uuid.UUID = ZERO_UUID
    is_internal: bool = False
    error_code: int = 0
    rows: Sequence[PartitionRow] = ()  # a list for a big answer: no copy of a million

    @property
    def partitions(self) -> tuple[PartitionMetadata, ...]:
        """The partitions as values (one object each: for the few of an admin answer)."""
        return tuple(PartitionMetadata(self.name, *row) for row in self.rows)


@dataclass(frozen=True, slots=True)
class MetadataSnapshot:
    """A decoded Metadata response, in the store's terms.

    ``epochs_reliable`` is False for Metadata below v9 (the guide's rule): those
    responses are accepted as they are, and their partitions' epochs become unknown.
    ``requested_topics`` None means "all topics": topics absent from the response are
    then dropped; otherwise only the named topics are touched. ``source`` names the
    answer in logs and errors ("Metadata v12 from node 1 (host:port)").
    """

    brokers: tuple[BrokerNode, ...]
    topics: tuple[TopicMetadata, ...]
    controller_id: int = -1
    cluster_id: str | None = None
    epochs_reliable: bool = True
    requested_topics: frozenset[str] | None = None
    source: str = "Metadata"


@dataclass(frozen=True, slots=True)
class LeaderHint(PartitionValue):
    """KIP-951 ``CurrentLeader`` for one partition of a Produce/Fetch response."""

    leader_id: int
    leader_epoch: int

    @classmethod
    def of(cls, topic: str, partition: int, current_leader: CurrentLeader) -> LeaderHint:
        """The hint a Produce, Fetch or ShareFetch partition answer carries."""
        return cls(topic, partition, current_leader.leader_id, current_leader.leader_epoch)


class CurrentLeader(Protocol):
    """The KIP-951 ``CurrentLeader`` field of every response that carries one."""

    @property
    def leader_id(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...


class NodeEndpoint(Protocol):
    """One entry of a response's KIP-951 ``NodeEndpoints``."""

    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def rack(self) -> str | None: ...


def endpoint_nodes(endpoints: Iterable[NodeEndpoint]) -> list[BrokerNode]:
    """A response's ``NodeEndpoints`` as the store's nodes."""
    return [BrokerNode(e.node_id, e.host, e.port, e.rack) for e in endpoints]


class HintOutcome(enum.Enum):
    """What the store did with one leader hint; the non-APPLIED names feed metrics."""

    APPLIED = "applied"
    INVALID = "invalid"  # leader_id < 0 or leader_epoch < 0: the broker sent "no hint"
    UNKNOWN_PARTITION = "unknown_partition"
    UNKNOWN_NODE = "unknown_node"  # neither cached nor listed in NodeEndpoints
    STALE_EPOCH = "stale_epoch"  # equal to or older than what the store knows


@dataclass(slots=True)
class MetadataChange:
    """What one mutation changed; handed to listeners (sender, fetcher, pool)."""

    reason: str
    #: (topic, partition) keys; a TopicPartition finds its own among them
    leaders_changed: set[tuple[str, int]] = field(default_factory=set)
    nodes_changed: set[int] = field(default_factory=set)
    nodes_removed: set[int] = field(default_factory=set)
    topics_added: set[str] = field(default_factory=set)
    topics_removed: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(
            self.leaders_changed
            or self.nodes_changed
            or self.nodes_removed
            or self.topics_added
            or self.topics_removed
        )


__all__ = [
    "BrokerNode",
    "CurrentLeader",
    "HintOutcome",
    "LeaderHint",
    "MetadataChange",
    "MetadataSnapshot",
    "NodeEndpoint",
    "PartitionMetadata",
    "PartitionRow",
    "TopicMetadata",
    "endpoint_nodes",
]
