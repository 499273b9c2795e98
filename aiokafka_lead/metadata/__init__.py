"""Cluster metadata: the epoch-guarded store and its value types."""

from aiokafka_lead.metadata import model
from aiokafka_lead.metadata.model import *  # noqa: F403
from aiokafka_lead.metadata.store import MetadataStore

__all__ = [*model.__all__, "MetadataStore"]  # noqa: PLE0604 (the model's names, then the store)
