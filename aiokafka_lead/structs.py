"""Small value types shared across the client (aiokafka-compatible names)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

KT = TypeVar("KT")
VT = TypeVar("VT")


class TopicPartition(NamedTuple):
    """A topic name and partition index (aiokafka.structs.TopicPartition)."""

    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    """A committed offset (aiokafka.structs.OffsetAndMetadata), with its leader epoch (KIP-320)."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1


class ConsumerGroupMetadata(NamedTuple):
    """A consumer's group membership, for ``send_offsets_to_transaction`` (KIP-447).

    The group coordinator rejects the transactional offset commit of a member that was
    fenced by a rebalance (stale generation) or replaced (static membership).
    """

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class RecordMetadata(NamedTuple):
    """Where a produced record landed (aiokafka.structs.RecordMetadata)."""

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int | None
    timestamp_type: int
    log_start_offset: int | None


@dataclass(slots=True)
class ConsumerRecord(Generic[KT, VT]):
    """A consumed record (aiokafka.structs.ConsumerRecord), plus its leader epoch (KIP-320)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: KT | None
    value: VT | None
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    headers: Sequence[tuple[str, bytes]]
    leader_epoch: int = -1
