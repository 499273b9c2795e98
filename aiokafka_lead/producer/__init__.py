"""The producer: accumulator, sender with KIP-951 retries, idempotence."""

from aiokafka_lead.producer.batch import DeliveryHandle
from aiokafka_lead.producer.partitioner import DefaultPartitioner, murmur2
from aiokafka_lead.producer.producer import AIOKafkaProducer, BatchBuilder, Producer

__all__ = ["AIOKafkaProducer", "BatchBuilder", "DefaultPartitioner", "DeliveryHandle", "Producer", "murmur2"]
