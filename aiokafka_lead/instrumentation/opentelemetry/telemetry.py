"""What the traced methods share while instrumented: the tracer, the three metric
instruments of the messaging conventions, the user's hooks, each client's description; and
the method replacements, undone by ``restore()``."""

from __future__ import annotations

import functools
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import _internal as _metrics_api
from opentelemetry.trace import Span, Status, StatusCode

from aiokafka_lead._version import __version__
from aiokafka_lead.instrumentation.opentelemetry import semconv
from aiokafka_lead.instrumentation.opentelemetry.semconv import Attributes, ClientDescription

log = logging.getLogger(__name__)

SCOPE = "aiokafka_lead.instrumentation.opentelemetry"

#: ``async def hook(span, args, kwargs)``, awaited before a record is sent
ProduceHook = Callable[[Span, tuple[Any, ...], dict[str, Any]], Awaitable[None]]
#: ``async def hook(span, record, args, kwargs)``, awaited in each record's CONSUMER span
ConsumeHook = Callable[[Span, Any, tuple[Any, ...], dict[str, Any]], Awaitable[None]]


def error_type(error: BaseException) -> str:
    """``error.type``: the exception's class name (Kafka's errors are named by their code)."""
    return type(error).__qualname__


def fail(span: Span, error: BaseException) -> None:
    """Mark ``span`` failed by ``error`` (it stays open)."""
    if span.is_recording():
        span.set_attribute(semconv.ERROR_TYPE, error_type(error))
        span.set_status(Status(StatusCode.ERROR, str(error) or error_type(error)))
        if isinstance(error, Exception):
            span.record_exception(error)


class Telemetry:
    """The tracer, the instruments and the hooks of one ``instrument()``, and what they do.

    ``quiet`` is true while nothing per record is to be recorded: the tracer is the API's
    no-op one (no SDK, or ``NoOpTracerProvider``), the meter too, and there is no hook. The
    traced methods then only pass the current context on (a sent record carries what the
    configured propagator injects from it, as the API's no-op spans do). A provider given
    to ``instrument()`` is what it is for good; the global ones can still be set after
    ``instrument()`` (once each): until both are, every call rechecks them (``settled`` is
    false), the first call after one is set picks it up.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None,
        meter_provider: metrics.MeterProvider | None,
        produce_hook: ProduceHook | None,
        consume_hook: ConsumeHook | None,
    ) -> None:
        if tracer_provider is None:
            trace.get_tracer_provider()  # sets the global one named by OTEL_PYTHON_TRACER_PROVIDER
        if meter_provider is None:
            metrics.get_meter_provider()  # and OTEL_PYTHON_METER_PROVIDER
        self.tracer = trace.get_tracer(
            SCOPE, __version__, tracer_provider=tracer_provider, schema_url=semconv.SCHEMA_URL
        )
        meter = metrics.get_meter(
            SCOPE, __version__, meter_provider=meter_provider, schema_url=semconv.SCHEMA_URL
        )
        self.sent = meter.create_counter(
            semconv.SENT_MESSAGES, "{message}", "Number of messages producer attempted to send to the broker."
        )
        self.consumed = meter.create_counter(
            semconv.CONSUMED_MESSAGES,
            "{message}",
            "Number of messages that were delivered to the application.",
        )
        self.duration = meter.create_histogram(
            semconv.OPERATION_DURATION,
            "s",
            "Duration of messaging operation initiated by a producer or consumer client.",
            explicit_bucket_boundaries_advisory=semconv.DURATION_BUCKETS,
        )
        self.produce_hook = produce_hook
        self.consume_hook = consume_hook
        self._clients: weakref.WeakKeyDictionary[object, ClientDescription] = weakref.WeakKeyDictionary()
        self._metric_attributes: dict[tuple[Any, ...], tuple[Attributes, Attributes]] = {}
        #: the traced records awaiting the delivery of their batch (producer.py)
        self.deliveries: dict[object, Any] = {}
        # what the providers are: given ones now, global ones once set
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._tracer_known = self._meter_known = False
        self.tracing = self.measuring = False
        self.settled = self.quiet = False
        self._look()

    def settle(self) -> bool:
        """Whether the calls are ``quiet``, the global providers set since looked at."""
        if _API_GLOBALS and (  # nothing set since: in as few steps as a check per call allows
            (self._tracer_known or trace._TRACER_PROVIDER is None)
            and (self._meter_known or _metrics_api._METER_PROVIDER is None)
        ):
            return self.quiet
        return self._look()

    def _look(self) -> bool:
        """Look at the providers not known yet; whether the calls are ``quiet``."""
        if not self._tracer_known:
            provider = self._tracer_provider or global_tracer_provider()
            if provider is not None:
                self._tracer_known = True
                if self._tracer_provider is None:  # the proxy's tracer, without the proxy
                    self.tracer = provider.get_tracer(SCOPE, __version__, schema_url=semconv.SCHEMA_URL)
                self.tracing = not isinstance(self.tracer, trace.NoOpTracer)
        if not self._meter_known:
            meter_provider = self._meter_provider or global_meter_provider()
            if meter_provider is not None:
                self._meter_known = True  # the proxy instruments delegate to the provider's
                meter = meter_provider.get_meter(SCOPE, __version__, schema_url=semconv.SCHEMA_URL)
                self.measuring = not isinstance(meter, metrics.NoOpMeter)
        self.settled = self._tracer_known and self._meter_known
        hooked = self.produce_hook is not None or self.consume_hook is not None
        self.quiet = not (self.tracing or self.measuring or hooked)
        return self.quiet

    def describe(self, client: Any) -> ClientDescription:
        """The client's description, made on its first traced call (its ``_config`` then)."""
        description = self._clients.get(client)
        if description is None:
            config = client._config
            # the consumer's group_id, the share consumer's group; a producer has none
            group = getattr(config, "group_id", None) or getattr(config, "group", None)
            description = ClientDescription.of(config.bootstrap_servers, config.client_id, group)
            self._clients[client] = description
        return description

    def metric_attributes(
        self,
        operation: str,
        topic: str | None = None,
        partition: int | None = None,
        group: str | None = None,
        error: str | None = None,
    ) -> tuple[Attributes, Attributes]:
        """The attributes of the message counters and of the duration histogram (which adds
        ``messaging.operation.type``), made once per combination."""
        key = (operation, topic, partition, group, error)
        found = self._metric_attributes.get(key)
        if found is None:
            count: Attributes = {semconv.SYSTEM: semconv.KAFKA, semconv.OPERATION_NAME: operation}
            if topic is not None:
                count[semconv.DESTINATION] = topic
            if partition is not None:
                count[semconv.PARTITION] = str(partition)
            if group is not None:
                count[semconv.GROUP] = group
            if error is not None:
                count[semconv.ERROR_TYPE] = error
            duration = dict(count)
            kind = {semconv.SEND: semconv.PUBLISH, semconv.RECEIVE: semconv.RECEIVE_TYPE}.get(operation)
            if kind is not None:
                duration[semconv.OPERATION_TYPE] = kind
            found = self._metric_attributes[key] = (count, duration)
        return found

    def record_duration(self, started: float, attributes: Attributes) -> None:
        if self.measuring:
            self.duration.record(time.monotonic() - started, attributes)


#: the API keeps the global providers in module variables, which its proxies read on each
#: call: read the same, without the environment lookup the public getters make
_API_GLOBALS = hasattr(trace, "_TRACER_PROVIDER") and hasattr(_metrics_api, "_METER_PROVIDER")
_PROXIES = ("ProxyTracerProvider", "_ProxyMeterProvider")


def global_tracer_provider() -> trace.TracerProvider | None:
    """The global tracer provider once set, else None."""
    if _API_GLOBALS:
        return trace._TRACER_PROVIDER
    provider = trace.get_tracer_provider()
    return None if type(provider).__name__ in _PROXIES else provider


def global_meter_provider() -> metrics.MeterProvider | None:
    """The global meter provider once set, else None."""
    if _API_GLOBALS:
        return _metrics_api._METER_PROVIDER
    provider = metrics.get_meter_provider()
    return None if type(provider).__name__ in _PROXIES else provider


class Patches:
    """Methods replaced on classes, and how to put them back."""

    _ABSENT = object()

    def __init__(self) -> None:
        self._saved: list[tuple[type, str, object]] = []

    def replace(self, owner: type, name: str, make: Callable[[Any], Any]) -> None:
        """``owner.name = make(current)``, the replacement looking like the method it wraps."""
        current = getattr(owner, name)
        replacement = functools.update_wrapper(make(current), current)
        self._saved.append((owner, name, owner.__dict__.get(name, self._ABSENT)))
        setattr(owner, name, replacement)

    def restore(self) -> None:
        while self._saved:
            owner, name, original = self._saved.pop()
            if original is self._ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


async def run_hook(hook: Callable[..., Awaitable[None]], *args: Any) -> None:
    """A user hook, whose failure is logged and goes no further."""
    try:
        await hook(*args)
    except Exception:
        log.exception("OpenTelemetry hook %r failed", hook)
