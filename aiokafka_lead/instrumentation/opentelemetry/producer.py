"""The producer's traced methods: ``send()`` (and ``send_and_wait()``, which calls it) and
the transaction calls.

A PRODUCER span ``<topic> send`` starts when ``send()`` is called, its context goes into the
record's headers (``traceparent``), and it ends when the record's delivery resolves, failed
(``error.type``, status ERROR) or not; ``messaging.destination.partition.id`` is the
partition the record was queued to. The delivery also counts
``messaging.client.sent.messages`` and records ``messaging.client.operation.duration``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind

from aiokafka_lead.instrumentation.opentelemetry import semconv
from aiokafka_lead.instrumentation.opentelemetry.headers import SETTER
from aiokafka_lead.instrumentation.opentelemetry.telemetry import (
    Patches,
    Telemetry,
    error_type,
    fail,
    run_hook,
)
from aiokafka_lead.producer.batch import DeliveryHandle
from aiokafka_lead.producer.producer import AIOKafkaProducer
from aiokafka_lead.producer.transaction import TransactionContext

log = logging.getLogger(__name__)


class _Deliveries:
    """The traced records of one batch. As each resolves, its duration is recorded and its
    span ends (failed, if it failed); the first of a resolution counts every record of ours
    it resolved (the records of a batch resolve together, or part by part if the batch was
    split; a cancelled handle resolves alone)."""

    __slots__ = ("batch", "counted", "ok", "partition", "records", "telemetry", "topic")

    def __init__(self, telemetry: Telemetry, batch: object, topic: str, partition: int) -> None:
        self.telemetry, self.batch, self.topic, self.partition = telemetry, batch, topic, partition
        self.records: dict[DeliveryHandle, tuple[Span | None, float]] = {}
        self.counted: object = None  # the batch (part) whose records were counted last
        self.ok = telemetry.metric_attributes(semconv.SEND, topic, partition)

    def add(self, handle: DeliveryHandle, span: Span | None, started: float) -> None:
        self.records[handle] = (span, started)
        handle.add_done_callback(self)

    def __call__(self, handle: DeliveryHandle) -> None:
        try:  # runs inside the producer's sender: nothing may escape
            span, started = self.records.pop(handle)
            telemetry = self.telemetry
            if handle.cancelled():
                error, resolved = None, None
            else:
                error, resolved = handle.exception(), handle._target()
            if telemetry.measuring:
                count, duration = self.ok
                if error is not None:
                    count, duration = telemetry.metric_attributes(
                        semconv.SEND, self.topic, self.partition, None, error_type(error)
                    )
                if resolved is None:
                    telemetry.sent.add(1, count)
                elif resolved is not self.counted:
                    self.counted = resolved
                    telemetry.sent.add(1 + sum(h._target() is resolved for h in self.records), count)
                telemetry.duration.record(time.monotonic() - started, duration)
            if span is not None:
                if error is not None:
                    fail(span, error)
                span.end()
            if not self.records and telemetry.deliveries.get(self.batch) is self:
                del telemetry.deliveries[self.batch]
        except Exception:
            log.exception("recording a delivery for OpenTelemetry failed")


def _with_current_context(headers: Iterable[tuple[str, bytes | None]] | None) -> Any:
    """The caller's headers (copied) and what the propagator injects from the current context."""
    try:
        carrier = [] if headers is None else list(headers)
    except TypeError:  # send() says what is wrong with them
        return headers
    propagate.inject(carrier, setter=SETTER)
    return carrier


def traced_send(telemetry: Telemetry) -> Callable[[Any], Any]:
    def make(send: Any) -> Any:
        async def traced(  # noqa: PLR0917 - aiokafka's positional signature
            self: AIOKafkaProducer,
            topic: str,
            value: Any = None,
            key: Any = None,
            partition: int | None = None,
            timestamp_ms: int | None = None,
            headers: Iterable[tuple[str, bytes | None]] | None = None,
        ) -> DeliveryHandle:
            if telemetry.quiet if telemetry.settled else telemetry.settle():
                # no span to make: a context the caller is in still goes on (an empty one
                # has nothing to inject)
                if otel_context.get_current():
                    headers = _with_current_context(headers)
                return await send(self, topic, value, key, partition, timestamp_ms, headers)  # type: ignore[no-any-return]
            started = time.monotonic()
            carrier: list[tuple[str, bytes | None]] = []
            if headers is not None:
                try:
                    carrier = list(headers)
                except TypeError:  # send() says what is wrong with them
                    return await send(self, topic, value, key, partition, timestamp_ms, headers)  # type: ignore[no-any-return]
            name, attributes = telemetry.describe(self).sending(str(topic))
            key_text = semconv.key_text(key)
            if key_text is not None:
                attributes = {**attributes, semconv.MESSAGE_KEY: key_text}
            span = telemetry.tracer.start_span(name, kind=SpanKind.PRODUCER, attributes=attributes)
            propagate.inject(carrier, context=trace.set_span_in_context(span), setter=SETTER)
            if telemetry.produce_hook is not None:
                with trace.use_span(span):
                    await run_hook(
                        telemetry.produce_hook,
                        span,
                        (topic, value, key, partition, timestamp_ms),
                        {"headers": carrier},
                    )
            try:
                handle: DeliveryHandle = await send(self, topic, value, key, partition, timestamp_ms, carrier)
            except BaseException as error:  # nothing was queued
                fail(span, error)
                span.end()
                _, duration = telemetry.metric_attributes(semconv.SEND, str(topic), error=error_type(error))
                telemetry.record_duration(started, duration)
                raise
            batch = handle._target()
            queued_to = batch.tp.partition
            recording = span.is_recording()
            if recording:
                span.set_attribute(semconv.PARTITION, str(queued_to))
            if recording or telemetry.measuring:
                deliveries = telemetry.deliveries.get(batch)
                if deliveries is None:
                    deliveries = telemetry.deliveries[batch] = _Deliveries(telemetry, batch, topic, queued_to)
                deliveries.add(handle, span if recording else None, started)
            return handle

        return traced

    return make


def traced_transaction_call(telemetry: Telemetry, operation: str) -> Callable[[Any], Any]:
    """``commit_transaction()``, ``abort_transaction()``, ``send_offsets_to_transaction()``:
    a CLIENT span named by the operation, and its duration."""

    def make(call: Any) -> Any:
        async def traced(self: AIOKafkaProducer, *args: Any, **kwargs: Any) -> Any:
            return await _traced_operation(telemetry, self, operation, call, self, *args, **kwargs)

        return traced

    return make


async def _traced_operation(
    telemetry: Telemetry, producer: AIOKafkaProducer, operation: str, call: Any, *args: Any, **kwargs: Any
) -> Any:
    started = time.monotonic()
    attributes = telemetry.describe(producer).transaction(operation)
    with telemetry.tracer.start_as_current_span(
        operation,
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            result = await call(*args, **kwargs)
        except BaseException as error:
            fail(span, error)
            _, duration = telemetry.metric_attributes(operation, error=error_type(error))
            telemetry.record_duration(started, duration)
            raise
    telemetry.record_duration(started, telemetry.metric_attributes(operation)[1])
    return result


class TracedTransaction:
    """``async with producer.transaction():`` under an INTERNAL span ``transaction``, current
    inside the block (its sends are its children), with the commit or abort at its end as a
    CLIENT span of its own."""

    def __init__(self, telemetry: Telemetry, producer: AIOKafkaProducer, inner: TransactionContext) -> None:
        self._telemetry, self._producer, self._inner = telemetry, producer, inner
        self._span: Span | None = None
        self._token: object = None

    async def __aenter__(self) -> TransactionContext:
        attributes = self._telemetry.describe(self._producer).transaction(semconv.TRANSACTION)
        span = self._telemetry.tracer.start_span(
            semconv.TRANSACTION, kind=SpanKind.INTERNAL, attributes=attributes
        )
        try:
            await self._inner.__aenter__()
        except BaseException as error:
            fail(span, error)
            span.end()
            raise
        self._span = span
        self._token = otel_context.attach(trace.set_span_in_context(span))
        return self._inner

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        span, self._span = self._span, None
        assert span is not None
        operation = semconv.COMMIT_TRANSACTION if exc is None else semconv.ABORT_TRANSACTION
        try:
            await _traced_operation(
                self._telemetry, self._producer, operation, self._inner.__aexit__, exc_type, exc, tb
            )
        except BaseException as error:
            fail(span, error)
            raise
        finally:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            if exc is not None:
                fail(span, exc)
            span.end()


def traced_transaction(telemetry: Telemetry) -> Callable[[Any], Any]:
    def make(transaction: Any) -> Any:
        def traced(self: AIOKafkaProducer) -> TracedTransaction:
            return TracedTransaction(telemetry, self, transaction(self))

        return traced

    return make


def patch_producer(patches: Patches, telemetry: Telemetry) -> None:
    patches.replace(AIOKafkaProducer, "send", traced_send(telemetry))
    patches.replace(AIOKafkaProducer, "transaction", traced_transaction(telemetry))
    for name, operation in (
        ("commit_transaction", semconv.COMMIT_TRANSACTION),
        ("abort_transaction", semconv.ABORT_TRANSACTION),
        ("send_offsets_to_transaction", semconv.SEND_OFFSETS),
    ):
        patches.replace(AIOKafkaProducer, name, traced_transaction_call(telemetry, operation))
