"""aiokafka's path of the consumer protocol's member metadata and assignment (defined in
:mod:`aiokafka_lead.consumer.member_protocol`)."""

from aiokafka_lead.consumer.member_protocol import (
    ConsumerProtocol,
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

__all__ = ["ConsumerProtocol", "ConsumerProtocolMemberAssignment", "ConsumerProtocolMemberMetadata"]
