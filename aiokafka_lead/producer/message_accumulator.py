"""aiokafka's path for ``BatchBuilder`` (defined with the producer, which creates it)."""

from aiokafka_lead.producer.producer import BatchBuilder

__all__ = ["BatchBuilder"]
