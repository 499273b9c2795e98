"""What both group protocols share: the rebalance listener, the interface the consumer
drives, and the link to the group coordinator.

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
from aiokafka_lead.client import ClientCore
from aiokafka_lead.error_code import COORDINATOR_MOVED
from aiokafka_lead.errors import KafkaConnectionError
from aiokafka_lead.requests.lookup import Lookups
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

    group_id: str
    group_instance_id: str | None
    listener: ConsumerRebalanceListener | None
    #: topics whose metadata the group needs beyond the subscription (the classic leader's)
    group_topics: set[str]

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


class CoordinatorLink:
    """Requests to one group's coordinator, found (and found again) through FindCoordinator."""

    def __init__(self, core: ClientCore, lookup: Lookups, group_id: str) -> None:
        self._core = core
        self._lookup = lookup
        self.group_id = group_id
        self.node_id: int | None = None

    async def coordinator(self) -> int:
        if self.node_id is None or self._core.store.node(self.node_id) is None:
            self.node_id = await self._lookup.find_coordinator(self.group_id)
            log.debug("group %s: coordinator is node %d", self.group_id, self.node_id)
        return self.node_id

    def forget(self, reason: str) -> None:
        log.debug("group %s: forgetting coordinator %s: %s", self.group_id, self.node_id, reason)
        self.node_id = None

    async def send(
        self, request: Any, *, version_cap: int | None = None, timeout_ms: float | None = None
    ) -> Any:
        return await self.send_built(
            request.API_KEY, lambda _: request, version_cap=version_cap, timeout_ms=timeout_ms
        )

    async def send_built(
        self,
        api_key: int,
        build: Callable[[int], Any],
        *,
        version_cap: int | None = None,
        timeout_ms: float | None = None,
    ) -> Any:
        """Send ``build(version)``: for requests whose fields depend on the negotiated version."""
        node = await self.coordinator()
        try:
            conn = await self._core.pool.connection(node, coordinator=True)
            version = conn.version_for(api_key)
            if version_cap is not None:
                version = min(version, version_cap)
            return await conn.send(build(version), version=version, timeout_ms=timeout_ms)
        except KafkaConnectionError as exc:
            self.forget(f"connection failed: {exc}")
            raise


__all__ = [
    "COORDINATOR_MOVED",
    "ConsumerRebalanceListener",
    "CoordinatorLink",
    "GroupMember",
    "call_listener",
]
