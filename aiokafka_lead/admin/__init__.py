"""The admin client (aiokafka-compatible) and its value types."""

from aiokafka_lead.admin.client import AdminClient, AIOKafkaAdminClient
from aiokafka_lead.admin.share_groups import (
    ShareGroupDescription,
    ShareGroupListing,
    ShareMemberDescription,
    SharePartitionOffset,
)
from aiokafka_lead.admin.types import (
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ElectionResult,
    ElectionType,
    GroupDescription,
    GroupListing,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    PartitionReassignment,
    RecordsToDelete,
    TopicDescription,
)
from aiokafka_lead.requests.offsets import ListOffsetsResultInfo

__all__ = [
    "AIOKafkaAdminClient",
    "AdminClient",
    "AlterConfigOp",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "ElectionResult",
    "ElectionType",
    "GroupDescription",
    "GroupListing",
    "ListOffsetsResultInfo",
    "NewPartitions",
    "NewTopic",
    "OffsetSpec",
    "PartitionReassignment",
    "RecordsToDelete",
    "ShareGroupDescription",
    "ShareGroupListing",
    "ShareMemberDescription",
    "SharePartitionOffset",
    "TopicDescription",
]
