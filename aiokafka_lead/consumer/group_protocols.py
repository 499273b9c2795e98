"""Choosing a group protocol: the consumer's keyword checks and the member they build.

Java's ConsumerConfig rules: each protocol refuses the other's settings. Under the
consumer protocol (KIP-848) the broker assigns partitions and decides the session
timeout and heartbeat interval, so the classic-only keywords are an error, not ignored.
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

GROUP_PROTOCOLS = ("classic", "consumer")
CLASSIC_SESSION_TIMEOUT_MS = 10_000
CLASSIC_HEARTBEAT_INTERVAL_MS = 3000


def check_group_protocol(
    group_protocol: str,
    remote_assignor: str | None,
    *,
    partition_assignment_strategy: Sequence[Any] | None,
    session_timeout_ms: int | None,
    heartbeat_interval_ms: int | None,
) -> None:
    if group_protocol not in GROUP_PROTOCOLS:
        raise ValueError(f"group_protocol must be one of {GROUP_PROTOCOLS}, not {group_protocol!r}")
    if group_protocol == "classic":
        if remote_assignor is not None:
            raise ValueError("group_remote_assignor needs group_protocol='consumer'")
        return
    classic_only = {
        "partition_assignment_strategy": partition_assignment_strategy,
        "session_timeout_ms": session_timeout_ms,
        "heartbeat_interval_ms": heartbeat_interval_ms,
    }
    given = sorted(name for name, value in classic_only.items() if value is not None)
    if given:
        raise ValueError(
            f"{', '.join(given)} cannot be set with group_protocol='consumer': the broker assigns "
            "partitions (see group_remote_assignor) and sets the session timeout and heartbeat interval"
        )


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


__all__ = ["GROUP_PROTOCOLS", "check_group_protocol", "create_group_member"]
