"""The partition identity, public as :class:`aiokafka_lead.structs.TopicPartition`.

It stands below the exceptions (``_errors_base``), which name partitions, so that the
errors stay the base layer and ``structs`` can build on them.
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A topic name and partition index (aiokafka.structs.TopicPartition)."""

    topic: str
    partition: int


__all__ = ["TopicPartition"]
