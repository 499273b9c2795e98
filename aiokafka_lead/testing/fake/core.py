"""What the fake cluster's coordinators build on: its topics and their partitions, which
node coordinates a key, producer ids, and the change signal.

``FakeCluster`` is the one implementation of :class:`ClusterCore`; the group, transaction
and share coordinators are given it as that, so they see this surface and nothing above it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from aiokafka_lead.testing.fake.partition import Partition

TP = tuple[str, int]  # a TopicPartition works too (it is a NamedTuple)


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    max_message_bytes: int | None = None  # the topic's max.message.bytes (None: unlimited)


class ClusterCore(Protocol):
    """The topics, coordinator placement, producer ids and change signal of a cluster."""

    topics: dict[str, Topic]

    def partition(self, tp: TP) -> Partition:
        """The partition ``tp`` (``KeyError``/``IndexError`` if there is none)."""
        ...

    def find_partition(self, topic: str, index: int) -> Partition | None: ...

    def coordinator_for(self, key: str, key_type: int = 0) -> int:
        """The node coordinating a group (``key_type`` 0) or a transactional id (1)."""
        ...

    def next_producer_id(self) -> int: ...

    def notify(self) -> None:
        """Wake every long poll so it re-checks (appends, moves, acknowledgements)."""
        ...


__all__ = ["TP", "ClusterCore", "Topic"]
