"""Producer counters, exposed through ``AIOKafkaProducer.metrics()``, and the
``producer-metrics`` group (Java's names) derived from them when read."""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from aiokafka_lead.telemetry.names import PRODUCER, MetricSet
from aiokafka_lead.telemetry.window import Peak


@dataclass(slots=True)
class LatencyStats:
    count: int = 0
    total_s: float = 0.0
    max_s: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total_s += seconds
        self.max_s = max(self.max_s, seconds)

    def as_dict(self) -> dict[str, float]:
        avg = self.total_s / self.count if self.count else 0.0
        return {"count": self.count, "avg_ms": avg * 1000, "max_ms": self.max_s * 1000}


@dataclass(slots=True)
class ProducerMetrics:
    records_sent: int = 0
    records_failed: int = 0
    records_retried: int = 0
    batches_sent: int = 0
    batches_retried: int = 0
    immediate_retries: int = 0
    batches_expired: int = 0
    batches_split: int = 0  # refused as too large (MESSAGE_TOO_LARGE) and sent again in parts
    produce_requests: int = 0
    records_requested: int = 0  # records in the Produce requests sent (a retry counts again)
    express_requests: int = 0  # sent on a node's second connection (lanes.py)
    pipelined_batches: int = 0  # sent while an earlier batch of their partition was in flight
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    request_latency: dict[int, LatencyStats] = field(default_factory=dict)
    latency_peak: Peak = field(default_factory=Peak)
    # per batch sent (a retry counts again): accumulator wait, bytes, compressed/uncompressed
    batches_drained: int = 0
    queue_time_s: float = 0.0
    queue_peak: Peak = field(default_factory=Peak)
    batch_bytes: int = 0
    batch_peak: Peak = field(default_factory=Peak)
    compression_ratios: float = 0.0
    # per Produce answer
    produce_answers: int = 0
    throttle_ms: float = 0.0
    throttle_peak: Peak = field(default_factory=Peak)

    def latency(self, node_id: int, seconds: float) -> None:
        self.request_latency.setdefault(node_id, LatencyStats()).add(seconds)
        self.latency_peak.record(seconds)

    def drained(self, queue_s: float, size: int, ratio: float) -> None:
        """One batch put into a Produce request."""
        self.batches_drained += 1
        self.queue_time_s += queue_s
        self.queue_peak.record(queue_s)
        self.batch_bytes += size
        self.batch_peak.record(size)
        self.compression_ratios += ratio

    def throttled(self, throttle_time_ms: int) -> None:
        self.produce_answers += 1
        self.throttle_ms += throttle_time_ms
        self.throttle_peak.record(throttle_time_ms)


_METERS = (
    ("record-send", "records_sent"),
    ("record-error", "records_failed"),
    ("record-retry", "records_retried"),
)


class ProducerMetricSource:
    """The ``producer-metrics`` group (a :class:`~aiokafka_lead.telemetry.registry.MetricSource`)."""

    def __init__(self, m: ProducerMetrics, buffer_used: Callable[[], int], buffer_memory: int) -> None:
        self._m = m
        self._buffer_used = buffer_used
        self._buffer_memory = buffer_memory

    def counters(self, out: dict[Hashable, float]) -> None:
        m = self._m
        for _, attr in _METERS:
            out[("producer", attr)] = getattr(m, attr)
        out[("producer", "batches_split")] = m.batches_split
        out[("latency", "sum")] = sum(s.total_s for s in m.request_latency.values())
        out[("latency", "count")] = sum(s.count for s in m.request_latency.values())
        out[("queue", "sum")] = m.queue_time_s
        out[("queue", "count")] = m.batches_drained
        out[("batch", "sum")] = m.batch_bytes
        out[("batch", "count")] = m.batches_drained
        out[("ratio", "sum")] = m.compression_ratios
        out[("ratio", "count")] = m.batches_drained
        out[("per-request", "sum")] = m.records_requested
        out[("per-request", "count")] = m.produce_requests
        out[("throttle", "sum")] = m.throttle_ms
        out[("throttle", "count")] = m.produce_answers

    def peaks(self) -> Iterable[Peak]:
        m = self._m
        return (m.latency_peak, m.queue_peak, m.batch_peak, m.throttle_peak)

    def emit(self, out: MetricSet) -> None:
        m = self._m
        for base, attr in _METERS:
            out.meter(PRODUCER, base, ("producer", attr))
        out.meter(PRODUCER, "batch-split", ("producer", "batches_split"))
        out.avg_max(PRODUCER, "request-latency", "latency", m.latency_peak, 1000.0)
        out.avg_max(PRODUCER, "record-queue-time", "queue", m.queue_peak, 1000.0)
        out.avg_max(PRODUCER, "batch-size", "batch", m.batch_peak)
        out.avg_max(PRODUCER, "produce-throttle-time", "throttle", m.throttle_peak)
        per_request = out.r.avg(("per-request", "sum"), ("per-request", "count"))
        out.add(PRODUCER, "records-per-request-avg", per_request)
        out.add(PRODUCER, "compression-rate-avg", out.r.avg(("ratio", "sum"), ("ratio", "count")))
        out.add(PRODUCER, "buffer-total-bytes", self._buffer_memory)
        out.add(PRODUCER, "buffer-available-bytes", self._buffer_memory - self._buffer_used())
