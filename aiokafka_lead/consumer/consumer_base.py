"""What the consumer's method groups share: its parts, and the checks and error hand-off of
every call.

:class:`~aiokafka_lead.consumer.consumer.AIOKafkaConsumer` builds the parts and runs their
lifecycle; its public methods are grouped by what they act on: the assignment
(``assignment_api.py``), positions and offset look-ups (``positions_api.py``), records and
commits (``consumer.py``).
"""

from __future__ import annotations

import logging

from aiokafka_lead.consumer.config import ConsumerConfig
from aiokafka_lead.consumer.errors import ConsumerStoppedError
from aiokafka_lead.consumer.fetcher import Fetcher
from aiokafka_lead.consumer.group_common import GroupMember
from aiokafka_lead.consumer.offsets import PositionManager
from aiokafka_lead.consumer.subscription import SubscriptionState
from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.requests.lookup import Lookups
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)


class ConsumerBase:
    """The consumer's parts (built by ``AIOKafkaConsumer._configure``) and what every call checks."""

    #: "new", "running", "stopping" or "stopped"
    _state: str
    _config: ConsumerConfig
    _core: ClientCore
    _subs: SubscriptionState
    _lookup: Lookups
    _positions: PositionManager
    _fetcher: Fetcher
    #: the group membership (None without a group_id)
    _coordinator: GroupMember | None
    #: errors for the user, raised by the next call that checks
    _errors: list[KafkaError]

    @property
    def _closed(self) -> bool:
        return self._state in ("stopping", "stopped")

    def _require_started(self) -> None:
        if self._closed:
            raise ConsumerStoppedError("the consumer is stopped")
        self._core.host.require_running()

    def _require_group_call(self) -> None:
        """Commits may still run while stop() leaves the group (its final auto-commit)."""
        if self._state == "stopped":
            raise ConsumerStoppedError("the consumer is stopped")
        self._core.host.require_running()

    def _report_error(self, error: KafkaError) -> None:
        log.debug("consumer error for the user: %r", error)
        # a partition that keeps failing the same way reports once until the user has seen it
        if not any(type(e) is type(error) and str(e) == str(error) for e in self._errors):
            self._errors.append(error)
        self._fetcher.notify_data()
        self._subs.notify()

    def _raise_pending(self, only: set[TopicPartition] | None = None) -> None:
        if self._errors:
            raise self._errors.pop(0)
        error = self._subs.partition_error(only)
        if error is not None:
            raise error


def only_topic_partitions(partitions: tuple[object, ...]) -> None:
    """The ``*partitions`` of a call are TopicPartitions (aiokafka's TypeError otherwise)."""
    if not all(isinstance(p, TopicPartition) for p in partitions):
        raise TypeError("partitions must be TopicPartition instances")


__all__ = ["ConsumerBase", "only_topic_partitions"]
