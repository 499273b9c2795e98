"""Membership of a share consumer in a share group (KIP-932, ShareGroupHeartbeat).

The broker assigns the partitions (any partition may go to several members at once); the
member heartbeats every ``heartbeat_interval_ms`` (the broker's value) and takes each
assignment it is sent as it is: there is nothing to revoke or commit first, since records
are locked one by one, not partitions. UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH drops the
assignment and joins again at epoch 0 with the same member id; closing leaves with epoch
-1. Coordinator moves are followed as for consumer groups (``CoordinatorLink``).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable

import anyio
import anyio.abc

from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.errors import KafkaError, UnsupportedVersionError, error_for_code
from aiokafka_lead.protocol.messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
from aiokafka_lead.requests.coordinator import CoordinatorLink, HeartbeatErrors, new_member_id
from aiokafka_lead.requests.groups import GroupRequests
from aiokafka_lead.share.config import ShareConsumerConfig
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)

HEARTBEAT = ShareGroupHeartbeatRequest.API_KEY
LEAVE_EPOCH = -1
#: until the broker says otherwise (Kafka's group.share.heartbeat.interval.ms default)
DEFAULT_HEARTBEAT_MS = 5000


class ShareGroupMember(HeartbeatErrors):
    """The heartbeat loop of one share consumer; ``assignment`` is what the broker gave it."""

    _log = log
    _GROUP_KIND = "share group"

    def __init__(
        self,
        core: ClientCore,
        lookup: GroupRequests,
        config: ShareConsumerConfig,
        *,
        on_assignment: Callable[[], None],
        report_error: Callable[[KafkaError], None],
    ) -> None:
        self._core = core
        self._config = config
        self._link = CoordinatorLink(core, lookup, config.group)
        self._backoff = core.backoff
        self._on_assignment = on_assignment
        self._report_error = report_error
        self.member_id = new_member_id()
        self.member_epoch = 0
        self.heartbeat_interval_s = DEFAULT_HEARTBEAT_MS / 1000
        self.topics: frozenset[str] = frozenset()
        #: the subscription was sent at the current membership (null means "unchanged")
        self._sent_topics: frozenset[str] | None = None
        #: the broker's assignment by topic id; names resolved through the metadata store
        self._target: dict[uuid.UUID, frozenset[int]] = {}
        self.assignment: frozenset[TopicPartition] = frozenset()
        #: set by the first answered heartbeat (the member is in the group)
        self.joined = anyio.Event()
        self._fatal: KafkaError | None = None
        self._closing = False
        self._incarnation = 0
        self._wake = anyio.Event()
        #: answered heartbeats and fencings (tests and metrics)
        self.heartbeats = 0
        self.fencings = 0

    @property
    def in_group(self) -> bool:
        return self.member_epoch > 0

    @property
    def coordinator_id(self) -> int | None:
        return self._link.node_id

    def subscribe(self, topics: frozenset[str]) -> None:
        self.topics = topics
        self._fatal = None
        self._wake.set()

    def on_metadata_change(self) -> None:
        if any(self._core.store.topic_name(t) is None for t in self._target):
            return
        self._resolve()

    # ------------------------------------------------------------------- loop
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        failures = 0
        while True:
            if not self.topics or self._fatal is not None or self._closing:
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            self._wake = anyio.Event()
            try:
                delay = await self._heartbeat()
                failures = 0
            except UnsupportedVersionError as exc:
                self._fail(
                    UnsupportedVersionError(
                        f"share group {self.group_id}: the coordinator does not speak ShareGroupHeartbeat "
                        "(share groups need brokers with the share APIs and the share.version feature "
                        f"finalized): {exc}"
                    )
                )
                continue
            except KafkaError as exc:
                delay = self._backoff.delay_s(failures)
                failures += 1
                log.info(
                    "share group %s: heartbeat failed (%r); retrying in %.0f ms",
                    self.group_id,
                    exc,
                    delay * 1e3,
                )
            with anyio.move_on_after(delay):
                await self._wake.wait()

    def _request(self, epoch: int) -> ShareGroupHeartbeatRequest:
        if epoch < 0:
            return ShareGroupHeartbeatRequest(
                group_id=self.group_id, member_id=self.member_id, member_epoch=epoch
            )
        changed = self._sent_topics != self.topics or epoch == 0
        return ShareGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            rack_id=self._config.client_rack if epoch == 0 else None,
            subscribed_topic_names=sorted(self.topics) if changed else None,
        )

    async def _send(self, request: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
        response: ShareGroupHeartbeatResponse = await self._link.send(
            request, timeout_ms=self._config.request_timeout_ms
        )
        return response

    async def _heartbeat(self) -> float:
        incarnation = self._incarnation
        sent_at = time.monotonic()
        request = self._request(self.member_epoch)
        response = await self._send(request)
        if incarnation != self._incarnation:
            return 0.0
        if response.error_code:
            code = response.error_code
            return self._heartbeat_error(
                code,
                error_for_code(
                    code, response.error_message or f"ShareGroupHeartbeat for group {self.group_id}"
                ),
            )
        self.heartbeats += 1
        if request.subscribed_topic_names is not None:
            self._sent_topics = frozenset(request.subscribed_topic_names)
        if response.member_id:
            self.member_id = response.member_id
        if response.heartbeat_interval_ms > 0:
            self.heartbeat_interval_s = response.heartbeat_interval_ms / 1000
        self.member_epoch = response.member_epoch
        if response.assignment is not None:
            self._target = {
                tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions
            }
            self._resolve()
        self.joined.set()
        return max(self.heartbeat_interval_s - (time.monotonic() - sent_at), 0.001)

    def _resolve(self) -> None:
        """The assignment by name; topic ids the metadata does not know yet wait for it."""
        store = self._core.store
        names: dict[TopicPartition, None] = {}
        unknown = False
        for topic_id, partitions in self._target.items():
            name = store.topic_name(topic_id)
            if name is None:
                unknown = True
                continue
            names.update({TopicPartition(name, p): None for p in partitions})
        if unknown:
            store.request_refresh(f"share group {self.group_id}: assigned unknown topic ids")
        new = frozenset(names)
        if new != self.assignment:
            log.info(
                "share group %s epoch %d: member %s assigned %d partition(s)",
                self.group_id, self.member_epoch, self.member_id, len(new),
            )  # fmt: skip
            self.assignment = new
            self._on_assignment()

    def _fence(self, reason: str) -> None:
        log.warning(
            "share group %s: member %s fenced (%s); rejoining at epoch 0",
            self.group_id,
            self.member_id,
            reason,
        )
        self.fencings += 1
        self._incarnation += 1
        self.member_epoch = 0
        self._sent_topics = None
        self._target = {}
        if self.assignment:
            self.assignment = frozenset()
            self._on_assignment()

    # ------------------------------------------------------------------- exit
    async def leave(self) -> None:
        """Leave the group (epoch -1): the broker reassigns at once."""
        self._closing = True
        self._wake.set()
        if not self.in_group:
            return
        self._incarnation += 1
        log.info("share group %s: member %s leaves", self.group_id, self.member_id)
        try:
            response = await self._send(self._request(LEAVE_EPOCH))
            if response.error_code:
                log.info("share group %s: leave: %r", self.group_id, error_for_code(response.error_code))
        except KafkaError as exc:
            log.info("share group %s: leave failed: %r", self.group_id, exc)
        self.member_epoch = 0
        self.assignment = frozenset()


__all__ = ["ShareGroupMember"]
