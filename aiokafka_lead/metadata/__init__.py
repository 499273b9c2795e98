"""Cluster metadata: the epoch-guarded store and its value types."""

from aiokafka_lead.metadata.model import (
    BrokerNode,
    HintOutcome,
    LeaderHint,
    MetadataChange,
    MetadataSnapshot,
    PartitionMetadata,
    TopicMetadata,
)
from aiokafka_lead.metadata.store import MetadataStore

__all__ = [
    "BrokerNode",
    "HintOutcome",
    "LeaderHint",
    "MetadataChange",
    "MetadataSnapshot",
    "MetadataStore",
    "PartitionMetadata",
    "TopicMetadata",
]
