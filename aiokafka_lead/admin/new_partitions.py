"""aiokafka's path for ``NewPartitions`` (defined in :mod:`aiokafka_lead.admin.types`)."""

from aiokafka_lead.admin.types import NewPartitions

__all__ = ["NewPartitions"]
