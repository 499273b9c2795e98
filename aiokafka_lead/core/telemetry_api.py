"""What every client offers of its metrics: Java's metric names (``kafka_metrics()``) and the
KIP-714 client instance id (``client_instance_id()``)."""

from __future__ import annotations

import uuid

from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.telemetry.names import MetricName


class TelemetryAPI:
    """Mixed into the producer, the consumers and the admin clients."""

    _core: ClientCore

    def kafka_metrics(self) -> dict[MetricName, float]:
        """The Java client's metrics (its ``metrics()``): group, name and tags as Java's, the
        value as Java computes it (rates per second over two 30 s windows; NaN for an average
        or maximum of nothing). docs/observability.md lists them."""
        return self._core.metrics.read().values

    async def client_instance_id(self, timeout_ms: float | None = None) -> uuid.UUID | None:
        """The id the brokers gave this client for its KIP-714 metrics (Java's
        ``clientInstanceId()``); None when metrics push is off or no broker takes pushes.
        Waits up to ``timeout_ms`` (default ``request_timeout_ms``) for the first answer."""
        telemetry = self._core.telemetry
        if telemetry is None:
            return None
        timeout = timeout_ms if timeout_ms is not None else self._core.config.request_timeout_ms
        return await telemetry.instance_id(timeout / 1000)
