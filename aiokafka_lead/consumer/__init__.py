"""The consumer: fetcher (KIP-951 hints, KIP-320 validation), KIP-207 offsets, classic groups.

Module map: ``consumer`` (public class), ``subscription`` (assignment and positions),
``fetcher`` (Fetch per leader node, bounded prefetch), ``session`` (KIP-227 fetch
sessions), ``buffer`` (lazy decode, read_committed), ``offsets`` (starting positions,
resets, KIP-320 validation), ``coordinator`` (group membership and commits),
``assignors`` (range, roundrobin, cooperative-sticky, the aiokafka-style adapter),
``sticky_assignor`` (eager sticky), ``errors``.
"""

from aiokafka_lead.consumer.assignors import (
    CooperativeStickyAssignor,
    MemberAssignment,
    MemberSubscription,
    PartitionAssignor,
    RangePartitionAssignor,
    RebalanceProtocol,
    RoundRobinPartitionAssignor,
)
from aiokafka_lead.consumer.consumer import AIOKafkaConsumer, Consumer, OffsetAndTimestamp
from aiokafka_lead.consumer.coordinator import ConsumerRebalanceListener
from aiokafka_lead.consumer.errors import (
    CommitFailedError,
    ConsumerStoppedError,
    IllegalStateError,
    LogTruncationError,
    NoOffsetForPartitionError,
)
from aiokafka_lead.consumer.sticky_assignor import StickyPartitionAssignor

__all__ = [
    "AIOKafkaConsumer",
    "CommitFailedError",
    "Consumer",
    "ConsumerRebalanceListener",
    "ConsumerStoppedError",
    "CooperativeStickyAssignor",
    "IllegalStateError",
    "LogTruncationError",
    "MemberAssignment",
    "MemberSubscription",
    "NoOffsetForPartitionError",
    "OffsetAndTimestamp",
    "PartitionAssignor",
    "RangePartitionAssignor",
    "RebalanceProtocol",
    "RoundRobinPartitionAssignor",
    "StickyPartitionAssignor",
]
