"""aiokafka's path for ``ConfigResource`` and ``ConfigResourceType`` (from :mod:`.types`)."""

from aiokafka_lead.admin.types import ConfigResource, ConfigResourceType

__all__ = ["ConfigResource", "ConfigResourceType"]
