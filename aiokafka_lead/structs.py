"""Small value types shared across the client (aiokafka-compatible names)."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A topic name and partition index (aiokafka.structs.TopicPartition)."""

    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    """A committed offset (aiokafka.structs.OffsetAndMetadata), with its leader epoch (KIP-320)."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1
