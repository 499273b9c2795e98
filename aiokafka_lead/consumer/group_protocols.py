"""The group member each protocol builds (``group_protocol``: "classic" or "consumer").

The keywords were checked at construction (``validation``: Java's rules, each protocol
refuses the other's settings); here the classic defaults fill what was not given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiokafka_lead.client import ClientCore
from aiokafka_lead.consumer.assignors import RangePartitionAssignor, resolve_assignors
from aiokafka_lead.consumer.consumer_protocol import ConsumerGroupMember
from aiokafka_lead.consumer.coordinator import GroupCoordinator
from aiokafka_lead.consumer.group_common import GroupMember
from aiokafka_lead.consumer.offsets import OffsetLookup
from aiokafka_lead.consumer.subscription import SubscriptionState
from aiokafka_lead.validation import CLASSIC_HEARTBEAT_INTERVAL_MS, CLASSIC_SESSION_TIMEOUT_MS


def create_group_member(
    group_protocol: str,
    core: ClientCore,
    subscriptions: SubscriptionState,
    lookup: OffsetLookup,
    *,
    remote_assignor: str | None,
    partition_assignment_strategy: Sequence[Any] | None,
    session_timeout_ms: int | None,
    heartbeat_interval_ms: int | None,
    **common: Any,
) -> GroupMember:
    """The member for ``group_protocol``; ``common`` holds the settings both protocols take."""
    if group_protocol == "consumer":
        return ConsumerGroupMember(core, subscriptions, lookup, remote_assignor=remote_assignor, **common)
    return GroupCoordinator(
        core,
        subscriptions,
        lookup,
        assignors=resolve_assignors(partition_assignment_strategy or (RangePartitionAssignor,)),
        session_timeout_ms=CLASSIC_SESSION_TIMEOUT_MS if session_timeout_ms is None else session_timeout_ms,
        heartbeat_interval_ms=(
            CLASSIC_HEARTBEAT_INTERVAL_MS if heartbeat_interval_ms is None else heartbeat_interval_ms
        ),
        **common,
    )


__all__ = ["create_group_member"]
