"""Consumer-side errors (aiokafka's names where aiokafka has one)."""

from __future__ import annotations

from collections.abc import Mapping

from aiokafka_lead.errors import KafkaError, OffsetOutOfRangeError
from aiokafka_lead.structs import TopicPartition


class IllegalStateError(KafkaError):
    """An API call that does not fit the consumer's current mode (e.g. assign after subscribe)."""


class CommitFailedError(KafkaError):
    """The commit cannot complete: the group rebalanced and the partitions may have moved."""


class ConsumerStoppedError(KafkaError):
    """The consumer was stopped while a call waited for records."""


class NoOffsetForPartitionError(KafkaError):
    """auto_offset_reset="none" and the partition has no committed offset to start from."""

    def __init__(self, partitions: set[TopicPartition]) -> None:
        names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions))
        super().__init__(f"no committed offset and auto_offset_reset='none' for {names}")
        self.partitions = partitions


class OffsetOutOfRangeConsumerError(OffsetOutOfRangeError):
    """A fetch position is out of range and auto_offset_reset="none"; ``offsets`` names them."""

    def __init__(self, offsets: Mapping[TopicPartition, int]) -> None:
        names = ", ".join(f"{tp.topic}-{tp.partition}@{off}" for tp, off in sorted(offsets.items()))
        super().__init__(f"fetch positions out of range (auto_offset_reset='none'): {names}")
        self.offsets = dict(offsets)


class LogTruncationError(KafkaError):
    """KIP-320: the log was truncated below our position after a leader change.

    Raised only with auto_offset_reset="none" (otherwise the consumer resumes at the first
    diverging offset). ``lost`` maps each partition to the half-open range of offsets that
    this consumer had already seen but that no longer exist on the new leader.
    """

    def __init__(self, lost: Mapping[TopicPartition, tuple[int, int]]) -> None:
        names = "; ".join(
            f"{tp.topic}-{tp.partition}: offsets {start}..{end - 1} lost (log now ends at {start})"
            for tp, (start, end) in sorted(lost.items())
        )
        super().__init__(f"log truncation detected (KIP-320): {names}")
        self.lost = dict(lost)

    @property
    def divergent_offsets(self) -> dict[TopicPartition, int]:
        """Where each partition's log now diverges: the position to seek to, to resume."""
        return {tp: start for tp, (start, _) in self.lost.items()}
