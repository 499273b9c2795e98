"""aiokafka's path for the eager sticky assignor (see :mod:`aiokafka_lead.consumer.sticky_assignor`)."""

from aiokafka_lead.consumer.sticky_assignor import (
    ConsumerGenerationPair,
    StickyAssignorMemberMetadataV1,
    StickyAssignorUserDataV1,
    StickyPartitionAssignor,
)

__all__ = [
    "ConsumerGenerationPair",
    "StickyAssignorMemberMetadataV1",
    "StickyAssignorUserDataV1",
    "StickyPartitionAssignor",
]
