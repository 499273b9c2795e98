"""KIP-714: the client's metrics pushed to a broker (GetTelemetrySubscriptions, PushTelemetry).

The loop asks a broker for the subscription (which metrics by name prefix, how often, delta
or cumulative sums, which codecs, how many bytes), then pushes the subscribed metrics as OTLP
``MetricsData`` at that interval (the first push after a random 0.5-1.5 of it, as Java does)
until the client closes, when one last push says ``terminating``. A broker without a client
telemetry receiver does not advertise the APIs: the loop then ends, logging at DEBUG only.
An error the broker answers never reaches the application: an unknown subscription or codec
asks for the subscription again, a payload too large or a throttled push waits for the next
interval, an invalid request or record ends the loop (DEBUG and INFO logs).
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.abc

from aiokafka_lead._version import __version__
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaError, UnsupportedCodecError
from aiokafka_lead.protocol.messages import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest,
    PushTelemetryResponse,
)
from aiokafka_lead.records.compression import CompressionType, compress, require_codec
from aiokafka_lead.telemetry.names import MetricName, spec_of
from aiokafka_lead.telemetry.otlp import CUMULATIVE, DELTA, Attribute, Point, metrics_data
from aiokafka_lead.telemetry.registry import MetricsRegistry

log = logging.getLogger(__name__)

ZERO_ID = uuid.UUID(int=0)
PREFIX = "org.apache.kafka"
SCOPE = "aiokafka_lead"
_CODECS = frozenset(int(c) for c in CompressionType)
#: the longest a close waits for the broker to take the terminating push
TERMINATING_PUSH_S = 2.0
#: how long to wait before asking again when the broker gave no usable subscription
RETRY_S = 30.0
#: the shortest wait before asking again after an error answer (whatever interval it names)
MIN_RETRY_S = 1.0


class TelemetryLink(Protocol):
    """How the loop reaches a broker: ``None`` when the broker does not speak the API."""

    async def send(self, request: Any) -> Any | None: ...


def telemetry_name(name: MetricName) -> str:
    """Java's KIP-714 naming: ``org.apache.kafka.`` + group without ``-metrics`` + name,
    lower case, hyphens as dots (``producer-node-metrics`` / ``request-latency-avg`` ->
    ``org.apache.kafka.producer.node.request.latency.avg``)."""
    group = name.group.lower().replace("-", ".").replace(".metrics", "")
    return f"{PREFIX}.{group}.{name.name.lower().replace('-', '.')}"


def _attribute(key: str, value: str) -> Attribute:
    """A tag as a data point attribute: Java's snake_case keys, except the node, which is
    ``node.id`` with the node's number, as librdkafka pushes it (``node-id=node-1`` ->
    ``node.id=1``)."""
    if key == "node-id" and value.startswith("node-"):
        return "node.id", int(value[len("node-") :])
    return key.replace("-", "_"), value


@dataclass(slots=True)
class Subscription:
    instance_id: uuid.UUID
    subscription_id: int
    codecs: Sequence[int]
    interval_s: float
    max_bytes: int
    delta: bool
    prefixes: Sequence[str]

    def wants(self, name: str) -> bool:
        """The empty prefix (KIP-714) and ``*`` (the broker's configuration) mean every metric."""
        return any(p in ("", "*") or name.startswith(p) for p in self.prefixes)


class TelemetryPusher:
    """One client's KIP-714 loop (a task of its task group) and its terminating push."""

    def __init__(
        self,
        registry: MetricsRegistry,
        link: TelemetryLink,
        resource: Callable[[], list[Attribute]],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._registry = registry
        self._link = link
        self._resource = resource
        self._clock = clock
        self._start_ns = int(clock() * 1e9)
        self._last_push_ns = self._start_ns
        self._last_sums: dict[tuple[str, tuple[Attribute, ...]], float] = {}
        self.subscription: Subscription | None = None
        self._instance_id = ZERO_ID
        self._known = anyio.Event()  # an answer came (or the broker does not take pushes)
        self._wake = anyio.Event()
        self.pushes = 0  # answered pushes (for tests and metrics)
        self.refused: list[str] = []  # names of the errors pushes were answered with
        self.ended: str | None = None  # why the loop ended, if it did
        self._closing = False

    async def instance_id(self, timeout_s: float) -> uuid.UUID | None:
        with anyio.move_on_after(timeout_s):
            await self._known.wait()
        return None if self._instance_id == ZERO_ID else self._instance_id

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            await self._loop()
        except _Stop:
            pass
        finally:
            self._known.set()

    async def _loop(self) -> None:
        while not self._closing:
            sub = await self._subscribe()
            if sub is None or self._closing:
                return
            if not sub.prefixes:  # nothing subscribed: ask again after the interval
                await self._sleep(sub.interval_s)
                continue
            await self._sleep(sub.interval_s * random.uniform(0.5, 1.5))
            while self.subscription is sub:
                await self._push(sub, terminating=False)
                if self.subscription is sub:
                    await self._sleep(sub.interval_s)

    async def _sleep(self, seconds: float) -> None:
        self._wake = anyio.Event()
        with anyio.move_on_after(seconds):
            await self._wake.wait()

    async def _subscribe(self) -> Subscription | None:
        while True:
            try:
                request = GetTelemetrySubscriptionsRequest(client_instance_id=self._instance_id)
                answer = await self._link.send(request)
            except KafkaError as exc:
                log.debug("GetTelemetrySubscriptions failed, asking again in %.0f s: %r", RETRY_S, exc)
                await self._sleep(RETRY_S)
                continue
            if answer is None:
                self.ended = "the broker does not accept client metrics (no telemetry receiver)"
                log.debug("metrics push off: %s", self.ended)
                return None
            assert isinstance(answer, GetTelemetrySubscriptionsResponse)
            if answer.error_code:
                interval_s = answer.push_interval_ms / 1000
                wait_s = max(interval_s, MIN_RETRY_S) if interval_s > 0 else RETRY_S
                log.debug("GetTelemetrySubscriptions answered error %d; asking again", answer.error_code)
                await self._sleep(wait_s)
                continue
            if answer.client_instance_id != ZERO_ID:
                self._instance_id = answer.client_instance_id
            self._known.set()
            prefixes = list(answer.requested_metrics)
            sub = Subscription(
                instance_id=self._instance_id,
                subscription_id=answer.subscription_id,
                codecs=list(answer.accepted_compression_types),
                interval_s=max(answer.push_interval_ms, 100) / 1000,
                max_bytes=answer.telemetry_max_bytes,
                delta=answer.delta_temporality,
                prefixes=prefixes,
            )
            self.subscription = sub
            log.debug(
                "telemetry subscription %d: %s every %.1f s", sub.subscription_id, prefixes, sub.interval_s
            )
            return sub

    def payload(self, sub: Subscription) -> bytes:
        """The subscribed metrics now, as OTLP MetricsData (sums as the broker asked)."""
        now_ns = int(self._clock() * 1e9)
        client_type = self._registry.client_type
        points: list[Point] = []
        for name, read in self._registry.read().values.items():
            full = telemetry_name(name)
            if not sub.wants(full) or math.isnan(read):  # an average of nothing: nothing to report
                continue
            value = read
            attributes = tuple(_attribute(k, v) for k, v in name.tags[1:])
            spec = spec_of(name.group, name.name, client_type)
            unit, doc = (spec.unit, spec.doc) if spec is not None else ("", "")
            is_sum = name.name.endswith("-total")
            if is_sum and sub.delta:
                key = (full, attributes)
                value = read - self._last_sums.get(key, 0.0)
                self._last_sums[key] = read
            number: float | int = int(value) if is_sum and value.is_integer() else value
            points.append(Point(full, number, attributes, is_sum, unit, doc))
        data = metrics_data(
            points,
            resource=self._resource(),
            scope=SCOPE,
            scope_version=__version__,
            temporality=DELTA if sub.delta else CUMULATIVE,
            start_ns=self._last_push_ns if sub.delta else self._start_ns,
            time_ns=now_ns,
        )
        self._last_push_ns = now_ns
        return data

    def _codec(self, sub: Subscription) -> int:
        for codec in sub.codecs:
            try:
                require_codec(codec)
            except UnsupportedCodecError:
                continue
            if codec in _CODECS:
                return codec
        return CompressionType.NONE

    async def _push(self, sub: Subscription, *, terminating: bool) -> None:
        codec = self._codec(sub)
        data = self.payload(sub)
        request = PushTelemetryRequest(
            client_instance_id=sub.instance_id,
            subscription_id=sub.subscription_id,
            terminating=terminating,
            compression_type=codec,
            metrics=compress(codec, data) if codec else data,
        )
        try:
            answer = await self._link.send(request)
        except KafkaError as exc:
            log.debug("PushTelemetry failed: %r", exc)
            return
        if answer is None:  # a broker that subscribes but takes no pushes
            self.ended = "the broker does not accept PushTelemetry"
            log.debug("metrics push off: %s", self.ended)
            self.subscription = None
            raise _Stop
        assert isinstance(answer, PushTelemetryResponse)
        if not answer.error_code:
            self.pushes += 1
            return
        try:
            error = ErrorCode(answer.error_code)
        except ValueError:  # a code newer than this client: as a refusal of this push only
            self.refused.append(str(answer.error_code))
            return
        self.refused.append(error.name)
        if error in (ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE):
            log.debug("PushTelemetry answered %s: asking for the subscription again", error.name)
            self.subscription = None
        elif error in (ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_RECORD):
            self.ended = f"the broker refused our metrics ({error.name})"
            log.info("metrics push off: %s", self.ended)
            self.subscription = None
            raise _Stop
        else:  # TELEMETRY_TOO_LARGE, THROTTLING_QUOTA_EXCEEDED, ...: the next interval
            log.debug("PushTelemetry answered %s", error.name)

    async def terminate(self, timeout_s: float) -> None:
        """The last push (``terminating``), if there is a subscription; bounded, never raises."""
        self._closing = True
        self._wake.set()
        sub, self.subscription = self.subscription, None
        if sub is None or not sub.prefixes:
            return
        with anyio.move_on_after(timeout_s, shield=True):
            with contextlib.suppress(_Stop):
                await self._push(sub, terminating=True)


class _Stop(Exception):
    """The broker refused our metrics for good."""
