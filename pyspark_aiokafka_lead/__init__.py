"""Lets Spark find the "aiokafka_lead" data source without a register() call: Spark looks
for modules named ``pyspark_*`` that define ``DefaultSource``."""

from aiokafka_lead.spark.source import KafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
