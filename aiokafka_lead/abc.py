"""aiokafka's abstract classes at aiokafka's path (``aiokafka.abc``).

``ConsumerRebalanceListener`` is the shape of what the consumer calls on a rebalance;
``AbstractTokenProvider`` is the shape of a SASL/OAUTHBEARER token source.
"""

from __future__ import annotations

import abc
from typing import Any

from aiokafka_lead.structs import TopicPartition


class ConsumerRebalanceListener:
    """aiokafka's listener shape; methods may be plain or ``async``.

    ``on_partitions_lost`` runs instead of ``on_partitions_revoked`` when the membership
    was lost (the partitions may already belong to someone else: do not commit there).
    """

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        return None

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        return None

    def on_partitions_lost(self, lost: set[TopicPartition]) -> Any:
        return self.on_partitions_revoked(lost)


class AbstractTokenProvider(abc.ABC):
    """A source of OAuth bearer tokens for SASL/OAUTHBEARER (aiokafka's interface).

    ``token()`` must be implemented: a coroutine returning the access token (a ``str``);
    a plain function is accepted too, and is called in a worker thread (it may block).
    It should reuse a token while it is valid, so connecting several times does not
    create several tokens, and return a fresh one once it expires: it is asked again at
    every (re-)authentication. ``extensions()`` may be overridden to send SASL extensions
    with the initial client request (KIP-342); by default there are none. Ready providers
    are in :mod:`aiokafka_lead.auth` (OIDC client credentials, JWT bearer, AWS MSK IAM).
    """

    @abc.abstractmethod
    async def token(self) -> str:
        """The access token to authenticate with."""

    def extensions(self) -> dict[str, str]:
        """SASL extensions (key -> value) for the initial client request; none by default."""
        return {}


__all__ = ["AbstractTokenProvider", "ConsumerRebalanceListener"]
