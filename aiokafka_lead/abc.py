"""aiokafka's abstract classes at aiokafka's path (``aiokafka.abc``).

``ConsumerRebalanceListener`` is the class the consumer calls (defined with the group code);
``AbstractTokenProvider`` is the shape of a SASL/OAUTHBEARER token source.
"""

from __future__ import annotations

import abc

from aiokafka_lead.consumer.group_common import ConsumerRebalanceListener


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
