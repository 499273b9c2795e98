"""aiokafka's path for ``RoundRobinPartitionAssignor`` (see :mod:`aiokafka_lead.consumer.assignors`)."""

from aiokafka_lead.consumer.assignors import RoundRobinPartitionAssignor

__all__ = ["RoundRobinPartitionAssignor"]
