"""Small value types shared across the client (aiokafka-compatible names).

``OffsetAndMetadata`` and ``OffsetAndTimestamp`` are aiokafka's 2-field tuples (equality,
hash, ``len``, unpacking and ``repr`` are the tuple's) that also carry the leader epoch
(KIP-320) as an attribute outside the tuple: ``leader_epoch``, -1 when unknown.
``ConsumerRecord.leader_epoch`` likewise takes no part in equality or ``repr``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, Self, TypeVar

from aiokafka_lead._topic_partition import TopicPartition

if TYPE_CHECKING:
    from aiokafka_lead.errors import KafkaError

KT = TypeVar("KT")
VT = TypeVar("VT")


class _HasLeaderEpoch(Protocol):
    leader_epoch: int


_E = TypeVar("_E", bound=_HasLeaderEpoch)


def _with_leader_epoch(value: _E, leader_epoch: int) -> _E:
    """``value`` carrying ``leader_epoch`` (unknown, -1, stays the class's default)."""
    if leader_epoch != -1:
        value.leader_epoch = leader_epoch
    return value


def _replaced(value: _E, replace: Callable[..., _E], changes: dict[str, Any]) -> _E:
    """``replace(**changes)`` (the tuple's ``_replace``), keeping or changing ``leader_epoch``."""
    epoch = changes.pop("leader_epoch", value.leader_epoch)
    return _with_leader_epoch(replace(**changes), epoch)


class _OffsetAndMetadataFields(NamedTuple):
    offset: int
    metadata: str


class OffsetAndMetadata(_OffsetAndMetadataFields):
    """A committed offset (aiokafka.structs.OffsetAndMetadata), with its leader epoch (KIP-320).

    ``OffsetAndMetadata(5, "")`` equals aiokafka's; ``leader_epoch`` is an attribute only.
    """

    leader_epoch: int = -1

    def __new__(cls, offset: int, metadata: str = "", leader_epoch: int = -1) -> Self:
        return _with_leader_epoch(super().__new__(cls, offset, metadata), leader_epoch)

    def _replace(self, **changes: Any) -> Self:
        return _replaced(self, super()._replace, changes)


class _OffsetAndTimestampFields(NamedTuple):
    offset: int
    timestamp: int | None


class OffsetAndTimestamp(_OffsetAndTimestampFields):
    """An ``offsets_for_times()`` result (aiokafka.structs.OffsetAndTimestamp), with the leader epoch.

    ``OffsetAndTimestamp(5, 1000)`` equals aiokafka's; ``leader_epoch`` is an attribute only.
    """

    leader_epoch: int = -1

    def __new__(cls, offset: int, timestamp: int | None, leader_epoch: int = -1) -> Self:
        return _with_leader_epoch(super().__new__(cls, offset, timestamp), leader_epoch)

    def _replace(self, **changes: Any) -> Self:
        return _replaced(self, super()._replace, changes)


class BrokerMetadata(NamedTuple):
    """A broker as metadata describes it (aiokafka.structs.BrokerMetadata)."""

    nodeId: int | str
    host: str
    port: int
    rack: str | None


class PartitionMetadata(NamedTuple):
    """A partition as a metadata response describes it (aiokafka.structs.PartitionMetadata)."""

    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    error: KafkaError | None


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
    leader_epoch: int = field(default=-1, compare=False, repr=False)


__all__ = [
    "KT",
    "VT",
    "BrokerMetadata",
    "ConsumerGroupMetadata",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "PartitionMetadata",
    "RecordMetadata",
    "TopicPartition",
]
