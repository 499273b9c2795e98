"""Share groups (KIP-932): ``AIOKafkaShareConsumer`` and its record and acknowledgement types."""

from aiokafka_lead.share.consumer import AIOKafkaShareConsumer
from aiokafka_lead.share.records import AcknowledgeType, ShareConsumerRecord

__all__ = ["AIOKafkaShareConsumer", "AcknowledgeType", "ShareConsumerRecord"]
