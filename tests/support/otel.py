"""aiokafka_lead's OpenTelemetry instrumentation recording into the SDK's in-memory exporter
and metric reader, for the duration of a test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler

from aiokafka_lead.instrumentation.opentelemetry import AIOKafkaLeadInstrumentor


@dataclass
class Recorded:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """The finished spans (of that name), in the order they ended."""
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def points(self, metric: str) -> list[tuple[dict[str, Any], Any]]:
        """``(attributes, point)`` of every data point of the metric recorded so far."""
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found += [(dict(p.attributes or {}), p) for p in m.data.data_points]
        return found


@contextmanager
def instrumented(sampler: Sampler | None = None, **hooks: Any) -> Iterator[Recorded]:
    """Instrumented until the block ends (then uninstrumented, whatever happened); spans
    sampled by ``sampler`` (the SDK's default: all)."""
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider(sampler=sampler)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = AIOKafkaLeadInstrumentor()
    instrumentor.instrument(
        tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader]), **hooks
    )
    try:
        yield Recorded(exporter, reader)
    finally:
        instrumentor.uninstrument()
