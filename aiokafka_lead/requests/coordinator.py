"""The link to a group's coordinator, shared by the consumer's group members and the share
consumer's: found through FindCoordinator, forgotten when it moves or its connection fails
(the next request finds it again at once); the member ids a client generates itself
(KIP-848, KIP-932); and what a KIP-848 or KIP-932 member does with a heartbeat's error
(``HeartbeatErrors``)."""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.error_code import COORDINATOR_MOVED, ErrorCode
from aiokafka_lead.errors import KafkaConnectionError, KafkaError
from aiokafka_lead.requests.groups import GroupRequests

log = logging.getLogger(__name__)


def new_member_id() -> str:
    """A random id in Kafka's Uuid text form (22 characters of URL-safe base64)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class CoordinatorLink:
    """Requests to one group's coordinator, found (and found again) through FindCoordinator."""

    def __init__(self, core: ClientCore, lookup: GroupRequests, group_id: str) -> None:
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


#: heartbeat answers that fence a member: it gives its assignment up and joins again at epoch 0
FENCED = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH})


class HeartbeatErrors:
    """One rule for the error of a ConsumerGroupHeartbeat (KIP-848) or ShareGroupHeartbeat
    (KIP-932) answer: the coordinator moved -> find it again and heartbeat at once; fenced
    (``FENCED``) -> join again at epoch 0, at once; retriable (or
    COORDINATOR_LOAD_IN_PROGRESS) -> heartbeat again after a backoff; anything else is fatal.
    The member supplies what fencing and failing mean to it."""

    #: the member's logger, and how its log lines name the group
    _log: ClassVar[logging.Logger]
    _GROUP_KIND: ClassVar[str] = "group"
    _link: CoordinatorLink
    _backoff: ExponentialBackoff
    _report_error: Callable[[KafkaError], None]
    _fatal: KafkaError | None

    @property
    def group_id(self) -> str:
        return self._link.group_id

    def _fence(self, reason: str) -> None:
        raise NotImplementedError

    def _fail(self, err: KafkaError) -> None:
        """A fatal answer (fenced static member, unknown assignor, bad regex...): the user is
        told, and heartbeats stop until the next subscribe()."""
        self._log.error(
            "%s %s: %r; heartbeats stop until the next subscribe()", self._GROUP_KIND, self.group_id, err
        )
        self._report_error(err)
        self._fatal = err
        self._fence(f"fatal: {type(err).__name__}")

    def _error_answer(self, err: KafkaError) -> None:
        """A retriable error answer (the coordinator moved, or busy): nothing by default."""

    def _heartbeat_error(self, code: int, err: KafkaError) -> float:
        """Act on the answer's error ``code`` (``err``); the delay before the next heartbeat."""
        if code in COORDINATOR_MOVED:
            self._link.forget(f"heartbeat: {type(err).__name__}")
            self._error_answer(err)
            return 0.0
        if code in FENCED:
            self._fence(f"heartbeat: {type(err).__name__}")
            return 0.0
        if err.retriable or code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            log.info("group %s: heartbeat: %r", self.group_id, err)
            self._error_answer(err)
            return self._backoff.delay_s(1)
        self._fail(err)
        return 0.0


__all__ = ["FENCED", "CoordinatorLink", "HeartbeatErrors", "new_member_id"]
