"""aiokafka's path for ``RecordsToDelete`` (defined in :mod:`aiokafka_lead.admin.types`)."""

from aiokafka_lead.admin.types import RecordsToDelete

__all__ = ["RecordsToDelete"]
