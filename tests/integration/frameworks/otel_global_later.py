"""aiokafka_lead instrumented before the application sets the global OpenTelemetry providers.

    python otel_global_later.py BOOTSTRAP TOPIC

``instrument()`` with no provider while none is set globally; one record sent; then the
SDK's tracer and meter providers set globally (recording into the in-memory exporter and
reader); a second record sent; both read back with ``getone()``. Prints one JSON document:
the records (value, headers), the spans (kind, ids, parent) and the sent and consumed
message counts. In its own interpreter: a global provider can be set once per process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.instrumentation.opentelemetry import AIOKafkaLeadInstrumentor

SCENARIO_TIMEOUT = 90.0


def count(reader: InMemoryMetricReader, name: str) -> int:
    data = reader.get_metrics_data()
    return sum(
        int(point.value)
        for resource in (data.resource_metrics if data else [])
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points  # type: ignore[union-attr]
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    args = parser.parse_args()
    AIOKafkaLeadInstrumentor().instrument()
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    async with asyncio.timeout(SCENARIO_TIMEOUT):
        async with AIOKafkaProducer(bootstrap_servers=args.bootstrap) as producer:
            await producer.send_and_wait(args.topic, b"before")
            tracer_provider = TracerProvider()
            tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(tracer_provider)
            metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
            await producer.send_and_wait(args.topic, b"after")
        consumer: AIOKafkaConsumer[bytes, bytes]
        async with AIOKafkaConsumer(
            args.topic, bootstrap_servers=args.bootstrap, auto_offset_reset="earliest"
        ) as consumer:
            records = [await consumer.getone(), await consumer.getone()]

    def context(span_context: Any) -> dict[str, str] | None:
        if span_context is None:
            return None
        return {"trace": f"{span_context.trace_id:032x}", "span": f"{span_context.span_id:016x}"}

    document = {
        "records": [
            {"value": r.value.decode(), "headers": [[k, v.decode()] for k, v in r.headers]} for r in records
        ],
        "spans": [
            {"name": s.name, "kind": s.kind.name, **(context(s.context) or {}), "parent": context(s.parent)}
            for s in exporter.get_finished_spans()
        ],
        "sent": count(reader, "messaging.client.sent.messages"),
        "consumed": count(reader, "messaging.client.consumed.messages"),
    }
    print(json.dumps(document, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
