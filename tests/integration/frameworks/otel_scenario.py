"""Produce and consume through OpenTelemetry's aiokafka instrumentation; print the spans.

    python otel_scenario.py BOOTSTRAP TOPIC GROUP                                # aiokafka
    python -m aiokafka_lead.as_aiokafka otel_scenario.py BOOTSTRAP TOPIC GROUP   # aiokafka_lead
    python otel_scenario.py --first-party BOOTSTRAP TOPIC GROUP   # aiokafka_lead, its own instrumentation

Two records with one key (so one partition, in order) are produced with ``send_and_wait``,
then a group member reads the first with ``getone()`` and the second with ``getmany()``.
The spans, recorded by the SDK's in-memory exporter, and the records read are printed as
one JSON document, canonical so that two runs on two fresh topics compare equal: trace
and span ids become placeholders numbered in the order the spans ended (also inside the
``traceparent`` headers), the topic reads ``<topic>`` and the group ``<group>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext

#: bounds the whole scenario (the caller's subprocess timeout is a little longer)
SCENARIO_TIMEOUT = 90.0
KEY = b"order-1"
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


async def produce_and_consume(client: Any, bootstrap: str, topic: str, group: str) -> list[Any]:
    """The records read: the first by getone(), the second by getmany(), with ``client``'s
    (the aiokafka module's, or aiokafka_lead's) producer and consumer."""
    producer = client.AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="otel-scenario-producer")
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"first", key=KEY, headers=[("origin", b"scenario")])
        await producer.send_and_wait(topic, b"second", key=KEY)
    finally:
        await producer.stop()
    consumer = client.AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        client_id="otel-scenario-consumer",
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        first = await consumer.getone()
        batch: Mapping[Any, list[Any]] = {}
        while not batch:  # an empty getmany() records no span
            batch = await consumer.getmany(timeout_ms=1000, max_records=1)
    finally:
        await consumer.stop()
    return [first, *(record for records in batch.values() for record in records)]


class Canonical:
    """Placeholders for ids, and the run's own names replaced by fixed ones."""

    def __init__(self, topic: str, group: str) -> None:
        self.names = {topic: "<topic>", group: "<group>"}
        self.traces: dict[int, str] = {}
        self.spans: dict[int, str] = {}

    def trace(self, trace_id: int) -> str:
        return self.traces.setdefault(trace_id, f"T{len(self.traces) + 1}")

    def span(self, span_id: int) -> str:
        return self.spans.setdefault(span_id, f"S{len(self.spans) + 1}")

    def text(self, value: str) -> str:
        for name, placeholder in self.names.items():
            value = value.replace(name, placeholder)
        parent = TRACEPARENT.match(value)
        if parent:
            trace, span = self.trace(int(parent[1], 16)), self.span(int(parent[2], 16))
            value = f"00-{trace}-{span}-{parent[3]}"
        return value

    def value(self, value: object) -> object:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, tuple | list):
            return [self.value(v) for v in value]
        return value

    def attributes(self, attributes: Mapping[str, object] | None) -> dict[str, object]:
        return {key: self.value(v) for key, v in sorted((attributes or {}).items())}

    def context(self, context: SpanContext) -> dict[str, object]:
        return {"trace": self.trace(context.trace_id), "span": self.span(context.span_id)}

    def spans_of(self, finished: tuple[ReadableSpan, ...]) -> list[dict[str, object]]:
        for span in finished:  # placeholders in the order the spans ended, parents after
            assert span.context is not None
            self.context(span.context)
        canonical = []
        for span in finished:
            assert span.context is not None
            parent = span.parent
            canonical.append(
                {
                    "name": self.text(span.name),
                    "kind": span.kind.name,
                    **self.context(span.context),
                    "parent": None
                    if parent is None
                    else {**self.context(parent), "remote": parent.is_remote},
                    "attributes": self.attributes(span.attributes),
                    "links": [
                        {**self.context(link.context), "attributes": self.attributes(link.attributes)}
                        for link in span.links
                    ],
                    "events": [
                        {"name": event.name, "attributes": self.attributes(event.attributes)}
                        for event in span.events
                    ],
                    "status": span.status.status_code.name,
                    "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
                }
            )
        return canonical

    def records(self, records: list[Any]) -> list[dict[str, object]]:
        return [
            {
                "topic": self.text(r.topic),
                "partition": r.partition,
                "offset": r.offset,
                "key": r.key.decode(),
                "value": r.value.decode(),
                "headers": [[k, None if v is None else self.text(v.decode())] for k, v in r.headers],
            }
            for r in records
        ]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("group")
    parser.add_argument(
        "--first-party",
        action="store_true",
        help="aiokafka_lead with its own instrumentation (aiokafka_lead.instrumentation.opentelemetry)",
    )
    args = parser.parse_args()
    instrumentor: Any
    if args.first_party:
        import aiokafka_lead as client
        from aiokafka_lead.instrumentation.opentelemetry import AIOKafkaLeadInstrumentor

        instrumentor = AIOKafkaLeadInstrumentor()
    else:
        import aiokafka as client
        from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor

        instrumentor = AIOKafkaInstrumentor()

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor.instrument(tracer_provider=provider)
    async with asyncio.timeout(SCENARIO_TIMEOUT):
        records = await produce_and_consume(client, args.bootstrap, args.topic, args.group)

    canonical = Canonical(args.topic, args.group)
    document = {
        "aiokafka": f"{client.__name__} {client.__file__}",
        "spans": canonical.spans_of(exporter.get_finished_spans()),
        "records": canonical.records(records),
    }
    print(json.dumps(document, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
