"""Consumer-side errors. aiokafka's (``ConsumerStoppedError``, ``CommitFailedError``, ...)
live in :mod:`aiokafka_lead.errors` and are re-exported here: one class each."""

from __future__ import annotations

from collections.abc import Mapping

from aiokafka_lead.errors import (
    CommitFailedError,
    ConsumerStoppedError,
    IllegalOperation,
    IllegalStateError,
    KafkaError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
)
from aiokafka_lead.structs import TopicPartition


def offsets_out_of_range(offsets: Mapping[TopicPartition, int]) -> OffsetOutOfRangeError:
    """aiokafka's OffsetOutOfRangeError for positions out of range under auto_offset_reset="none";
    ``offsets`` names them."""
    names = ", ".join(f"{tp.topic}-{tp.partition}@{off}" for tp, off in sorted(offsets.items()))
    error = OffsetOutOfRangeError(f"fetch positions out of range (auto_offset_reset='none'): {names}")
    error.offsets = dict(offsets)  # type: ignore[attr-defined]
    return error


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


__all__ = [
    "CommitFailedError",
    "ConsumerStoppedError",
    "IllegalOperation",
    "IllegalStateError",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "offsets_out_of_range",
]
