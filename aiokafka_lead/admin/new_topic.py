"""aiokafka's path for ``NewTopic`` (defined in :mod:`aiokafka_lead.admin.types`)."""

from aiokafka_lead.admin.types import NewTopic

__all__ = ["NewTopic"]
