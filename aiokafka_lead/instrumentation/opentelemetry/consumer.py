"""The consumers' traced methods: ``getone()`` (and ``async for``, which calls it) and
``getmany()``, of ``AIOKafkaConsumer`` and of ``AIOKafkaShareConsumer`` alike.

Every record handed out gets a CONSUMER span ``<topic> receive`` whose parent is the context
its producer put in its headers (a root span without one). ``getmany()`` also makes a poll
span (named by the sorted topics) over one span per partition, which links the partition's
record spans. An empty ``getmany()`` makes no span. Each call that returns records counts
``messaging.client.consumed.messages`` per partition and records
``messaging.client.operation.duration``; a call that fails records its duration with
``error.type``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind

from aiokafka_lead.consumer.consumer import AIOKafkaConsumer
from aiokafka_lead.instrumentation.opentelemetry import semconv
from aiokafka_lead.instrumentation.opentelemetry.headers import GETTER
from aiokafka_lead.instrumentation.opentelemetry.semconv import ClientDescription
from aiokafka_lead.instrumentation.opentelemetry.telemetry import Patches, Telemetry, error_type, run_hook
from aiokafka_lead.share.consumer import AIOKafkaShareConsumer


def _start_record_span(
    telemetry: Telemetry, client: ClientDescription, record: Any, headerless: Context | None = None
) -> Span:
    """The record's CONSUMER span, child of its producer's context (in its headers).
    ``headerless``: what the propagator extracts from no headers here, when already known."""
    headers = record.headers
    parent = propagate.extract(headers, getter=GETTER) if headers or headerless is None else headerless
    topic, partition = record.topic, record.partition
    attributes = client.record(topic, partition, record.offset, semconv.key_text(record.key))
    return telemetry.tracer.start_span(
        client.receiving(topic, partition)[0], context=parent, kind=SpanKind.CONSUMER, attributes=attributes
    )


async def _hooked(
    telemetry: Telemetry, span: Span, record: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    assert telemetry.consume_hook is not None
    with trace.use_span(span):
        await run_hook(telemetry.consume_hook, span, record, args, kwargs)


def _count(telemetry: Telemetry, client: ClientDescription, topic: str, partition: int, records: int) -> None:
    if telemetry.measuring:
        count, _ = telemetry.metric_attributes(semconv.RECEIVE, topic, partition, client.group)
        telemetry.consumed.add(records, count)


async def _trace_record(
    telemetry: Telemetry,
    client: ClientDescription,
    record: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    """What ``getone()`` returned: its record's span."""
    span = _start_record_span(telemetry, client, record)
    if telemetry.consume_hook is not None:
        await _hooked(telemetry, span, record, args, kwargs)
    span.end()
    _count(telemetry, client, record.topic, record.partition, 1)


async def _trace_batches(
    telemetry: Telemetry,
    client: ClientDescription,
    batches: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    """What ``getmany()`` returned: the poll span over a span per partition, over a span per
    record that the partition span links."""
    tracer = telemetry.tracer
    hook = telemetry.consume_hook
    topics = ", ".join(sorted({tp.topic for tp in batches}))
    with tracer.start_as_current_span(
        semconv.span_name(topics, semconv.RECEIVE),
        kind=SpanKind.CONSUMER,
        attributes=client.poll(sum(len(records) for records in batches.values())),
    ):
        for tp, records in batches.items():
            with tracer.start_as_current_span(
                client.receiving(tp.topic, tp.partition)[0],
                kind=SpanKind.CONSUMER,
                attributes=client.partition_batch(tp.topic, tp.partition, len(records)),
            ) as partition_span:
                linking = partition_span.is_recording()
                headerless = propagate.extract((), getter=GETTER)  # the same for every such record
                for record in records:
                    span = _start_record_span(telemetry, client, record, headerless)
                    if hook is not None:
                        await _hooked(telemetry, span, record, args, kwargs)
                    span.end()
                    if linking:
                        partition_span.add_link(span.get_span_context())
            _count(telemetry, client, tp.topic, tp.partition, len(records))


Tracing = Callable[[Telemetry, ClientDescription, Any, tuple[Any, ...], dict[str, Any]], Awaitable[None]]


def traced_receive(telemetry: Telemetry, trace_result: Tracing) -> Callable[[Any], Any]:
    """A receiving method that traces what it returned (nothing for an empty ``getmany()``)
    and records its duration, also when it fails; with nothing to record, the method itself
    (a record read carries its context in its headers to whoever reads them)."""

    def make(receive: Any) -> Any:
        async def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
            if telemetry.quiet if telemetry.settled else telemetry.settle():
                return await receive(self, *args, **kwargs)
            started = time.monotonic()
            try:
                result = await receive(self, *args, **kwargs)
            except BaseException as error:
                if telemetry.measuring:
                    _, duration = telemetry.metric_attributes(
                        semconv.RECEIVE, group=telemetry.describe(self).group, error=error_type(error)
                    )
                    telemetry.record_duration(started, duration)
                raise
            if result:
                client = telemetry.describe(self)
                await trace_result(telemetry, client, result, args, kwargs)
                if telemetry.measuring:
                    telemetry.record_duration(
                        started, telemetry.metric_attributes(semconv.RECEIVE, group=client.group)[1]
                    )
            return result

        return traced

    return make


def patch_consumers(patches: Patches, telemetry: Telemetry) -> None:
    for consumer in (AIOKafkaConsumer, AIOKafkaShareConsumer):
        patches.replace(consumer, "getone", traced_receive(telemetry, _trace_record))
        patches.replace(consumer, "getmany", traced_receive(telemetry, _trace_batches))


__all__ = ["patch_consumers"]
