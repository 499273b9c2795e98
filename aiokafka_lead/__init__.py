"""aiokafka_lead: an asyncio Kafka client with KIP-951 leader discovery.

Migrating from aiokafka is an import change: the public classes keep aiokafka's names,
constructor keywords and methods.
"""

from aiokafka_lead._version import __version__
from aiokafka_lead.admin import AdminClient, AIOKafkaAdminClient
from aiokafka_lead.consumer import (
    AIOKafkaConsumer,
    CommitFailedError,
    Consumer,
    ConsumerRebalanceListener,
    ConsumerStoppedError,
    CooperativeStickyAssignor,
    IllegalStateError,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetAndTimestamp,
    RangePartitionAssignor,
    RoundRobinPartitionAssignor,
)
from aiokafka_lead.errors import IllegalOperation
from aiokafka_lead.producer import AIOKafkaProducer, Producer
from aiokafka_lead.share import AcknowledgeType, AIOKafkaShareConsumer, ShareConsumerRecord
from aiokafka_lead.structs import ConsumerRecord, OffsetAndMetadata, RecordMetadata, TopicPartition

__all__ = [
    "AIOKafkaAdminClient",
    "AIOKafkaConsumer",
    "AIOKafkaProducer",
    "AIOKafkaShareConsumer",
    "AcknowledgeType",
    "AdminClient",
    "CommitFailedError",
    "Consumer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerStoppedError",
    "CooperativeStickyAssignor",
    "IllegalOperation",
    "IllegalStateError",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "Producer",
    "RangePartitionAssignor",
    "RecordMetadata",
    "RoundRobinPartitionAssignor",
    "ShareConsumerRecord",
    "TopicPartition",
    "__version__",
]
