"""What a group member is made of, whichever protocol it speaks: its settings, the link
to the coordinator, the committer and ``commit()``.

``coordinator.GroupCoordinator`` (classic) and ``consumer_protocol.ConsumerGroupMember``
(KIP-848) extend it with their own membership logic; each answers the committer's
questions about its identity (``commit_identity``, ``commit_rejected``,
``identity_changed``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, ClassVar

import anyio
import anyio.abc

from aiokafka_lead.consumer.commits import CommitIdentity, OffsetCommitter
from aiokafka_lead.consumer.config import GroupConfig
from aiokafka_lead.consumer.group_common import ConsumerRebalanceListener, CoordinatorLink
from aiokafka_lead.consumer.metrics import GroupStats
from aiokafka_lead.consumer.subscription import SubscriptionState
from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.ratelog import RateLimitedLog
from aiokafka_lead.requests.lookup import Lookups
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

#: one of a member's loops
Loop = Callable[[], Coroutine[Any, Any, None]]


class GroupMemberBase:
    """Settings and plumbing shared by both protocols' members."""

    #: the protocol module's logger
    _log: ClassVar[logging.Logger]
    #: the requests the member retries for ever: what the operator is told when one keeps
    #: failing, and from how many failures in a row
    _RETRIED: ClassVar[dict[str, tuple[str, int]]]

    def __init__(
        self,
        core: ClientCore,
        subscriptions: SubscriptionState,
        lookup: Lookups,
        config: GroupConfig,
        *,
        consumed_offsets: Callable[[], dict[TopicPartition, OffsetAndMetadata]],
        report_error: Callable[[KafkaError], None],
        last_poll: Callable[[], float] = time.monotonic,
    ) -> None:
        assert config.group_id is not None
        self._core = core
        self._subs = subscriptions
        self._config = config
        self._link = CoordinatorLink(core, lookup, config.group_id)
        self._backoff = core.backoff
        self._consumed_offsets = consumed_offsets
        self._report_error = report_error
        self._last_poll = last_poll
        #: commits, heartbeats and rebalances (the consumer-coordinator-metrics group)
        self.stats = GroupStats()
        self._committer = OffsetCommitter(
            self._link,
            self,
            backoff=core.backoff,
            config=config,
            consumed_offsets=consumed_offsets,
            stats=self.stats,
        )
        #: ``commit(offsets, *, only_changed=False, timeout_ms=None)``: commit ``offsets`` (None:
        #: the consumed positions) within ``timeout_ms``
        self.commit = self._committer.commit
        self.listener: ConsumerRebalanceListener | None = None
        #: topics whose metadata the group needs beyond the subscription (the classic leader's)
        self.group_topics: set[str] = set()
        #: True after leaving because the application stopped polling; the next poll rejoins
        self.poll_expired = False
        #: True once the first assignment is in place (the consumer's start() waits for it)
        self.assignment_done = False
        self._warn = RateLimitedLog(self._log)
        self._init_protocol()

    def _init_protocol(self) -> None:
        """The protocol's own state, set up from ``self._config`` after the shared parts."""
        raise NotImplementedError

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The member's two loops (see ``_loops``) and, with auto-commit, the committer's."""
        background, main = self._loops()
        async with anyio.create_task_group() as tg:
            tg.start_soon(background)
            if self._config.enable_auto_commit:
                tg.start_soon(self._committer.auto_commit_loop)
            task_status.started()
            await main()

    def _loops(self) -> tuple[Loop, Loop]:
        """The protocol's loops: one in the background, and the one ``run`` runs itself."""
        raise NotImplementedError

    def _assignment_in_place(self) -> None:
        if not self.assignment_done:
            self.assignment_done = True
            self._subs.notify()

    def _retrying(self, key: str, exc: KafkaError, delay_s: float, failures: int) -> int:
        """A failed ``key`` request (one of ``_RETRIED``), tried again in ``delay_s`` after
        ``failures`` failures in a row; returns the new count. Logged each time; a run of
        failures also warns the operator (rate limited), since the member retries for ever."""
        failures += 1
        keeps_failing, warn_after = self._RETRIED[key]
        self._log.info(
            "group %s: %s failed (%r); retrying in %.0f ms", self.group_id, key, exc, delay_s * 1000
        )
        if failures >= warn_after:
            self._warn.warning(
                key,
                "group %s: %s (%d in a row, coordinator node %s); last error: %r; still retrying",
                self.group_id, keeps_failing, failures, self._link.node_id, exc,
            )  # fmt: skip
        return failures

    def _recovered(self, key: str) -> int:
        """A ``key`` request succeeded: the next run of failures warns at once again; returns
        the new count of failures in a row (0)."""
        self._warn.clear(key)
        return 0

    @property
    def group_id(self) -> str:
        return self._link.group_id

    @property
    def group_instance_id(self) -> str | None:
        return self._config.group_instance_id

    @property
    def coordinator_id(self) -> int | None:
        return self._link.node_id

    # the committer's questions, answered by each protocol
    def commit_identity(self) -> CommitIdentity:
        raise NotImplementedError

    def commit_rejected(self, code: int, sent: CommitIdentity) -> bool:
        raise NotImplementedError

    async def identity_changed(self, sent: CommitIdentity) -> None:
        raise NotImplementedError


__all__ = ["GroupMemberBase", "Loop"]
