"""aiokafka_lead traced by its OpenTelemetry instrumentation for a benchmark run: with the SDK
(spans through a batch processor to an exporter that drops them, metrics aggregated by an
in-memory reader: the work a real set-up does, without the export), the same sampling 1% of
the traces (``sdk-sampled``: ``ParentBased(TraceIdRatioBased(0.01))``, what a busy service
would run), or with the API's no-op providers (the instrumentation's own work only).
``client="aiokafka"``: aiokafka traced by opentelemetry-instrumentation-aiokafka the same
way, for comparison."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: the benchmark clients' environment variable: ``sdk`` or ``api``
OTEL_ENV = "AIOKAFKA_LEAD_BENCH_OTEL"
MODES = ("sdk", "sdk-sampled", "api")


def instrument(mode: str, client: str = "ours") -> None:
    """Instrument aiokafka_lead (``client="ours"``) or aiokafka for ``mode`` (one of ``MODES``)."""
    if mode not in MODES:
        raise ValueError(f"OpenTelemetry mode {mode!r}: one of {', '.join(MODES)}")
    instrumentor: Any
    if client == "aiokafka":
        from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor

        instrumentor = AIOKafkaInstrumentor()
    else:
        from aiokafka_lead.instrumentation.opentelemetry import AIOKafkaLeadInstrumentor

        instrumentor = AIOKafkaLeadInstrumentor()
    if mode == "api":
        instrumentor.instrument()
        return
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    class Dropped(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    sampler = ParentBased(TraceIdRatioBased(0.01)) if mode == "sdk-sampled" else None
    tracer_provider = TracerProvider(sampler=sampler)
    tracer_provider.add_span_processor(BatchSpanProcessor(Dropped()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    options: dict[str, Any] = {"tracer_provider": tracer_provider, "meter_provider": meter_provider}
    instrumentor.instrument(**options)
