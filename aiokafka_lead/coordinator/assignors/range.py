"""aiokafka's path for ``RangePartitionAssignor`` (see :mod:`aiokafka_lead.consumer.assignors`)."""

from aiokafka_lead.consumer.assignors import RangePartitionAssignor

__all__ = ["RangePartitionAssignor"]
