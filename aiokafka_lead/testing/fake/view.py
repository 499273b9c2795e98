"""The fake cluster as its brokers and their request handlers see it.

:class:`ClusterView` is what a handler gets as ``cluster``: the core (topics, placement,
producer ids, changes), the coordinators, the nodes, the scenario state a test set (lagging
Metadata, hidden nodes, the replica selector) and where a broker reports what it saw (the
request log, the interceptors, handler and protocol errors). ``FakeCluster`` implements it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from aiokafka_lead.protocol.messages import ApiVersionsResponse
from aiokafka_lead.testing.fake.core import TP, ClusterCore, Topic
from aiokafka_lead.testing.fake.groups import GroupCoordinator
from aiokafka_lead.testing.fake.intercept import Interceptors
from aiokafka_lead.testing.fake.log import RequestRecord
from aiokafka_lead.testing.fake.partition import Partition
from aiokafka_lead.testing.fake.share_groups import ShareCoordinator
from aiokafka_lead.testing.fake.telemetry import FakeTelemetry
from aiokafka_lead.testing.fake.transactions import TxnCoordinator

#: KIP-392: a broker's ``replica.selector``,
#: ``(cluster, partition, client rack, fetch offset) -> node id | None`` (see ``replicas.py``)
ReplicaSelector: TypeAlias = Callable[["ClusterView", Partition, str, int], "int | None"]


class Node(Protocol):
    """One broker as the others describe it: address, rack, what it advertises."""

    host: str
    port: int
    rack: str | None

    @property
    def running(self) -> bool: ...

    def api_versions(self) -> list[ApiVersionsResponse.ApiVersion]: ...


@dataclass(slots=True)
class MetadataView:
    """What a lagging broker keeps answering Metadata with (frozen at lag time)."""

    nodes: dict[int, tuple[str, int]]
    #: (topic, partition) -> (leader_id, leader_epoch) of the frozen partitions only
    partitions: dict[TP, tuple[int, int]] = field(default_factory=dict)


class ClusterView(ClusterCore, Protocol):
    """Everything a fake broker and its request handlers use of the cluster."""

    cluster_id: str
    groups: GroupCoordinator
    shares: ShareCoordinator
    txns: TxnCoordinator
    interceptors: Interceptors
    handler_errors: list[BaseException]
    protocol_errors: list[Exception]
    hidden_nodes: set[int]
    auto_create_topics: bool
    default_partitions: int
    replica_selector: ReplicaSelector | None
    telemetry: FakeTelemetry | None

    @property
    def brokers(self) -> Mapping[int, Node]: ...

    def address(self, node_id: int) -> tuple[str, int]: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None: ...

    def create_topic(self, name: str, partitions: int = 1) -> uuid.UUID: ...

    def metadata_view(self, node_id: int) -> MetadataView | None:
        """The frozen Metadata of a lagging node, ``None`` when it answers the current state."""
        ...

    def log_request(self, record: RequestRecord) -> None:
        """Log a request a broker received (it wakes ``wait_for``)."""
        ...

    async def wait_changed(self) -> None:
        """Return at the next :meth:`notify`."""
        ...


__all__ = ["ClusterView", "MetadataView", "Node", "ReplicaSelector"]
