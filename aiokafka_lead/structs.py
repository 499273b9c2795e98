"""Small value types shared across the client (aiokafka-compatible names)."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A topic name and partition index (aiokafka.structs.TopicPartition)."""

    topic: str
    partition: int
