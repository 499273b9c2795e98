"""aiokafka's private consumer attributes that frameworks and instrumentation read, with
aiokafka's meaning (docs/migrating.md, "Frameworks" lists who reads what).

``_closed`` and ``_coordinator`` (the group membership, with ``member_id``; None without a
group) are the consumer's own; this mixin adds the others, read-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiokafka_lead.client_view import AIOKafkaClientView

if TYPE_CHECKING:
    from aiokafka_lead.consumer.config import ConsumerConfig
    from aiokafka_lead.consumer.subscription import SubscriptionState


class ConsumerCompat:
    """``_group_id``, ``_enable_auto_commit``, ``_subscription`` and ``_client``."""

    if TYPE_CHECKING:  # the consumer's parts (AIOKafkaConsumer._configure)
        _config: ConsumerConfig
        _subs: SubscriptionState

    @property
    def _group_id(self) -> str | None:
        return self._config.group_id

    @property
    def _enable_auto_commit(self) -> bool:
        return self._config.enable_auto_commit

    @property
    def _subscription(self) -> SubscriptionState:
        """The subscription: ``topics`` is the subscribed topics (a pattern's matches, the
        assigned partitions' topics after ``assign()``; empty without either)."""
        return self._subs

    @property
    def _client(self) -> AIOKafkaClientView:
        """aiokafka's ``AIOKafkaClient`` as instrumentation reads it: ``_bootstrap_servers``
        and ``_client_id``."""
        view: AIOKafkaClientView | None = self.__dict__.get("_client_view")
        if view is None:
            view = self.__dict__["_client_view"] = AIOKafkaClientView(self._config)
        return view


__all__ = ["ConsumerCompat"]
