"""OffsetCommit for both group protocols (v2-9, with the leader epoch of each offset, KIP-320).

The request carries the member's identity: the classic generation id, or the KIP-848
member epoch (v9 is the first version a consumer-protocol group accepts). What a
membership error means differs per protocol, so the committer asks its member
(:class:`CommitMember`): the classic member raises ``CommitFailedError`` and rejoins;
the KIP-848 member answers STALE_MEMBER_EPOCH by waiting for its next heartbeat and
having the same offsets committed again with the new epoch, never dropping them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import anyio

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.consumer.config import GroupConfig
from aiokafka_lead.consumer.group_common import COORDINATOR_MOVED, CoordinatorLink
from aiokafka_lead.consumer.metrics import GroupStats
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaError, KafkaTimeoutError, error_for_code
from aiokafka_lead.protocol.messages import OffsetCommitRequest
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

OFFSET_COMMIT_MAX = 9  # v10 names topics by id only


@dataclass(frozen=True, slots=True)
class CommitIdentity:
    """Who commits: generation id or member epoch (-1 and "" outside a group)."""

    generation_or_epoch: int
    member_id: str
    group_instance_id: str | None


class CommitMember(Protocol):
    def commit_identity(self) -> CommitIdentity: ...

    def commit_rejected(self, code: int, sent: CommitIdentity) -> bool:
        """A member error on commit: raise, or return True to retry once the identity changed."""
        ...

    async def identity_changed(self, sent: CommitIdentity) -> None:
        """Return once the member's identity differs from ``sent`` (bounded by the caller)."""
        ...


#: the answers a commit hands back to its member (membership and epoch errors)
MEMBER_ERRORS = frozenset({
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.FENCED_INSTANCE_ID,
    ErrorCode.FENCED_MEMBER_EPOCH,
    ErrorCode.STALE_MEMBER_EPOCH,
})


class OffsetCommitter:
    """Commits offsets within a deadline; remembers what was committed (for auto-commit)."""

    def __init__(
        self,
        link: CoordinatorLink,
        member: CommitMember,
        *,
        backoff: ExponentialBackoff,
        config: GroupConfig,
        consumed_offsets: Callable[[], dict[TopicPartition, OffsetAndMetadata]],
        stats: GroupStats,
    ) -> None:
        self._stats = stats
        self._link = link
        self._member = member
        self._backoff = backoff
        self._config = config
        self._consumed_offsets = consumed_offsets
        self.last_committed: dict[TopicPartition, OffsetAndMetadata] = {}

    @property
    def group_id(self) -> str:
        return self._link.group_id

    async def auto_commit_loop(self) -> None:
        """Background: commit the consumed positions that changed, every ``auto_commit_interval_ms``."""
        while True:
            await anyio.sleep(self._config.auto_commit_interval_ms / 1000)
            try:
                await self.commit(None, only_changed=True)
            except KafkaError as exc:
                log.info("group %s: auto-commit failed: %r", self.group_id, exc)

    async def commit_consumed(
        self, partitions: set[TopicPartition] | None, why: str, *, timeout_ms: float | None = None
    ) -> None:
        """Commit the consumed positions (of ``partitions``, or all that changed) before they
        change hands; a failure is logged, not raised: the hand-over goes on regardless."""
        if partitions is None:
            offsets, only_changed = None, True
        else:
            offsets = {tp: om for tp, om in self._consumed_offsets().items() if tp in partitions}
            only_changed = False
        try:
            await self.commit(offsets, only_changed=only_changed, timeout_ms=timeout_ms)
        except KafkaError as exc:
            log.warning("group %s: commit %s failed: %r", self.group_id, why, exc)

    async def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
        *,
        only_changed: bool = False,
        timeout_ms: float | None = None,
    ) -> None:
        if offsets is None:
            offsets = self._consumed_offsets()
        if only_changed:
            offsets = {tp: om for tp, om in offsets.items() if self.last_committed.get(tp) != om}
        if not offsets:
            return
        timeout = self._config.request_timeout_ms if timeout_ms is None else timeout_ms
        deadline = time.monotonic() + timeout / 1000
        failures = 0
        pending = dict(offsets)
        last: KafkaError | None = None
        while True:
            try:
                with anyio.fail_after(max(deadline - time.monotonic(), 0.001)):
                    sent = self._member.commit_identity()
                    pending, wait_identity = await self._commit_once(pending, sent)
                    if not pending:
                        return
                    if wait_identity:
                        log.info(
                            "group %s: commit at stale epoch %d; retrying after the next heartbeat",
                            self.group_id,
                            sent.generation_or_epoch,
                        )
                        await self._member.identity_changed(sent)
                        continue
                delay = 0.0 if self._link.node_id is None else self._backoff.delay_s(failures)
            except TimeoutError:
                node = self._link.node_id
                why = (
                    f"last error: {last!r}"
                    if last is not None
                    else "no OffsetCommit answer from the group coordinator"
                    + (f" (node {node})" if node is not None else "")
                )
                raise KafkaTimeoutError(
                    f"commit for group {self.group_id} timed out after {timeout} ms; {why}"
                ) from None
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                last = exc
                delay = self._backoff.delay_s(failures)
            failures += 1
            if time.monotonic() + delay > deadline:
                raise KafkaTimeoutError(
                    f"commit for group {self.group_id} did not complete within {timeout} ms"
                )
            await anyio.sleep(delay)

    async def _commit_once(
        self, offsets: dict[TopicPartition, OffsetAndMetadata], sent: CommitIdentity
    ) -> tuple[dict[TopicPartition, OffsetAndMetadata], bool]:
        """One OffsetCommit: (what must be retried, whether to wait for a new identity first)."""
        by_topic: dict[str, list[OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
        for tp, om in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=om.offset,
                    committed_leader_epoch=om.leader_epoch,
                    committed_metadata=om.metadata,
                )
            )
        request = OffsetCommitRequest(
            group_id=self.group_id,
            generation_id_or_member_epoch=sent.generation_or_epoch,
            member_id=sent.member_id,
            group_instance_id=sent.group_instance_id,
            retention_time_ms=-1,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        sent_at = time.monotonic()
        response = await self._link.send(request, version_cap=OFFSET_COMMIT_MAX)
        self._stats.committed(time.monotonic() - sent_at)
        retry: dict[TopicPartition, OffsetAndMetadata] = {}
        wait_identity = False
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if tp not in offsets:
                    continue
                code = p.error_code
                if not code:
                    self.last_committed[tp] = offsets[tp]
                    continue
                if code in COORDINATOR_MOVED:
                    self._link.forget("commit: coordinator moved")
                    retry[tp] = offsets[tp]
                elif code in MEMBER_ERRORS:
                    # the member raises CommitFailedError, or asks for a retry at its next identity
                    wait_identity |= self._member.commit_rejected(code, sent)
                    retry[tp] = offsets[tp]
                else:
                    err = error_for_code(
                        code,
                        f"OffsetCommit {tp.topic}-{tp.partition} for group {self.group_id} "
                        f"from node {self._link.node_id}",
                    )
                    if not err.retriable:
                        raise err
                    retry[tp] = offsets[tp]
        return retry, wait_identity


__all__ = ["CommitIdentity", "CommitMember", "OffsetCommitter"]
