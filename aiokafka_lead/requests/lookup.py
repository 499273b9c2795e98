"""What the producer and the consumer ask of the request layer: coordinator look-ups,
committed offsets (OffsetFetch) and offset look-ups (ListOffsets)."""

from __future__ import annotations

from aiokafka_lead.requests.groups import GroupRequests
from aiokafka_lead.requests.offsets import OffsetsRequests


class Lookups(GroupRequests, OffsetsRequests):
    """FindCoordinator, OffsetFetch and ListOffsets on a client's core, with its settings."""


__all__ = ["Lookups"]
