"""The group member each protocol builds (``group_protocol``: "classic" or "consumer").

The options were checked when the configuration was built (``consumer.config``: Java's
rules, each protocol refuses the other's settings); each member reads its own.
"""

from __future__ import annotations

from typing import Any

from aiokafka_lead.consumer.config import GroupConfig
from aiokafka_lead.consumer.consumer_protocol import ConsumerGroupMember
from aiokafka_lead.consumer.coordinator import GroupCoordinator
from aiokafka_lead.consumer.group_common import GroupMember
from aiokafka_lead.consumer.subscription import SubscriptionState
from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.requests.lookup import Lookups


def create_group_member(
    config: GroupConfig,
    core: ClientCore,
    subscriptions: SubscriptionState,
    lookup: Lookups,
    **common: Any,
) -> GroupMember:
    """The member for ``config.group_protocol``; ``common`` holds what the consumer hands both."""
    member = ConsumerGroupMember if config.group_protocol == "consumer" else GroupCoordinator
    return member(core, subscriptions, lookup, config, **common)


__all__ = ["create_group_member"]
