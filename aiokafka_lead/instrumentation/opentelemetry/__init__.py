"""OpenTelemetry tracing and messaging metrics for aiokafka_lead's clients
(``pip install aiokafka_lead[otel]``; docs/observability.md).

    from aiokafka_lead.instrumentation.opentelemetry import AIOKafkaLeadInstrumentor

    AIOKafkaLeadInstrumentor().instrument()  # the global tracer and meter providers
    AIOKafkaLeadInstrumentor().instrument(tracer_provider=tp, meter_provider=mp)
    AIOKafkaLeadInstrumentor().uninstrument()

``instrument()`` replaces the clients' public methods (``send``, ``getone``, ``getmany``,
the transaction calls) by traced ones, on the classes, so every client (existing or new)
is traced; ``uninstrument()`` puts the originals back. Nothing is traced or measured before
``instrument()``, and the clients' code does no tracing work of its own. ``opentelemetry-
instrument`` finds the instrumentor through the ``opentelemetry_instrumentor`` entry point.

The spans and their attributes are those opentelemetry-instrumentation-aiokafka gives
aiokafka (span names, kinds, attribute keys, parents and links), so the two instrument the
same code alike; instrument one or the other, not both (behind ``aiokafka_lead.as_aiokafka``
both would wrap the same methods and every span would come twice). The keywords are
theirs too: ``tracer_provider``, ``async_produce_hook(span, args, kwargs)``,
``async_consume_hook(span, record, args, kwargs)``, plus ``meter_provider``.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from aiokafka_lead.instrumentation.opentelemetry.consumer import patch_consumers
from aiokafka_lead.instrumentation.opentelemetry.producer import patch_producer
from aiokafka_lead.instrumentation.opentelemetry.telemetry import Patches, Telemetry


class AIOKafkaLeadInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Traces and measures aiokafka_lead's producers, consumers and share consumers."""

    _patches: Patches | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return ()  # what it instruments is the package it belongs to

    def _instrument(self, **kwargs: Any) -> None:
        for hook in ("async_produce_hook", "async_consume_hook"):
            if kwargs.get(hook) is not None and not inspect.iscoroutinefunction(kwargs[hook]):
                raise TypeError(f"{hook} must be an async function, not {kwargs[hook]!r}")
        telemetry = Telemetry(
            kwargs.get("tracer_provider"),
            kwargs.get("meter_provider"),
            kwargs.get("async_produce_hook"),
            kwargs.get("async_consume_hook"),
        )
        patches = Patches()
        patch_producer(patches, telemetry)
        patch_consumers(patches, telemetry)
        self._patches = patches

    def _uninstrument(self, **kwargs: Any) -> None:
        if self._patches is not None:
            self._patches.restore()
            self._patches = None


__all__ = ["AIOKafkaLeadInstrumentor"]
