"""What both group protocols share: the rebalance listener, the interface the consumer
drives, and the link to the group coordinator (``requests/coordinator.py``, re-exported).

The consumer sees one small interface, :class:`GroupMember`, whichever protocol runs
behind it: the classic one (``coordinator.GroupCoordinator``: JoinGroup/SyncGroup,
client-side assignors) or KIP-848's (``consumer_protocol.ConsumerGroupMember``:
ConsumerGroupHeartbeat, broker-side assignors).

Coordinator moves are handled like leader moves: NOT_COORDINATOR or
COORDINATOR_NOT_AVAILABLE forgets the coordinator and the next request finds it again
at once; only answers that say "wait" (COORDINATOR_LOAD_IN_PROGRESS, a failed
connection) back off.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import anyio.abc

from aiokafka_lead.abc import ConsumerRebalanceListener
from aiokafka_lead.consumer.metrics import GroupStats
from aiokafka_lead.error_code import COORDINATOR_MOVED
from aiokafka_lead.requests.coordinator import CoordinatorLink
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)


async def call_listener(fn: Callable[[set[TopicPartition]], Any] | None, tps: set[TopicPartition]) -> None:
    """Run a listener callback; its exception is logged, never raised (aiokafka's rule: a
    failing callback neither stops the rebalance nor reaches the poll)."""
    if fn is None:
        return
    try:
        result = fn(set(tps))
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("rebalance listener %s failed for %s", getattr(fn, "__qualname__", fn), sorted(tps))


class GroupMember(Protocol):
    """What the consumer asks of its group membership, whichever protocol runs it."""

    listener: ConsumerRebalanceListener | None
    #: topics whose metadata the group needs beyond the subscription (the classic leader's)
    group_topics: set[str]

    @property
    def group_id(self) -> str: ...

    @property
    def group_instance_id(self) -> str | None: ...

    @property
    def generation_id(self) -> int:
        """The classic generation id, or the KIP-848 member epoch (-1: not in the group)."""
        ...

    @property
    def member_id(self) -> str: ...

    @property
    def in_group(self) -> bool: ...

    #: True once the first assignment is in place (start() waits for it, as aiokafka's)
    assignment_done: bool
    #: commits, heartbeats and rebalances (the consumer-coordinator-metrics group)
    stats: GroupStats

    @property
    def coordinator_id(self) -> int | None: ...

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = ...) -> None: ...

    def request_rejoin(self, reason: str) -> None: ...

    def on_metadata_change(self) -> None: ...

    def on_poll(self) -> None: ...

    async def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
        *,
        only_changed: bool = False,
        timeout_ms: float | None = None,
    ) -> None: ...

    async def close(self, *, leave: bool = True) -> None: ...

    async def leave(self, reason: str) -> None: ...


__all__ = [
    "COORDINATOR_MOVED",
    "ConsumerRebalanceListener",
    "CoordinatorLink",
    "GroupMember",
    "call_listener",
]
