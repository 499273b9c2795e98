"""What code written for aiokafka reads on its ``AIOKafkaClient``: ``producer.client`` and
``consumer._client`` (docs/migrating.md, "Frameworks").

Tracing integrations (OpenTelemetry's, ddtrace's) tag their spans with the client's bootstrap
servers and client id and look a topic's partitions up before a send. aiokafka_lead has no
``AIOKafkaClient``: this view answers those reads from the client's configuration and its
own metadata wait. Attributes a caller sets on it (ddtrace caches a cluster id there) stay on
the view, which is the same object for the client's whole life.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from aiokafka_lead.network.config import ConnectionConfig


class AIOKafkaClientView:
    """Read-only ``_bootstrap_servers``, ``_client_id``; ``await _wait_on_metadata(topic)``."""

    def __init__(
        self,
        config: ConnectionConfig,
        wait_on_metadata: Callable[[str], Awaitable[set[int]]] | None = None,
    ) -> None:
        self.__config = config
        self.__wait_on_metadata = wait_on_metadata

    @property
    def _bootstrap_servers(self) -> str | Sequence[str]:
        """``bootstrap_servers`` as given to the constructor."""
        return self.__config.bootstrap_servers

    @property
    def _client_id(self) -> str | None:
        """The client id sent with every request."""
        return self.__config.client_id

    async def _wait_on_metadata(self, topic: str) -> set[int]:
        """The topic's partition ids, once its metadata is known (the producer's
        ``partitions_for``: up to ``max_block_ms``, then ``KafkaTimeoutError``)."""
        if self.__wait_on_metadata is None:
            raise NotImplementedError("only the producer's client view waits on a topic's metadata")
        return await self.__wait_on_metadata(topic)

    def __repr__(self) -> str:
        return f"<AIOKafkaClientView client_id={self._client_id}>"


__all__ = ["AIOKafkaClientView"]
