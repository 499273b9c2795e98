"""Producer counters, exposed through ``AIOKafkaProducer.metrics()``."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field


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
    batches_sent: int = 0
    batches_retried: int = 0
    immediate_retries: int = 0
    batches_expired: int = 0
    batches_split: int = 0  # refused as too large (MESSAGE_TOO_LARGE) and sent again in parts
    produce_requests: int = 0
    express_requests: int = 0  # sent on a node's second connection (lanes.py)
    pipelined_batches: int = 0  # sent while an earlier batch of their partition was in flight
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    request_latency: dict[int, LatencyStats] = field(default_factory=dict)

    def latency(self, node_id: int, seconds: float) -> None:
        self.request_latency.setdefault(node_id, LatencyStats()).add(seconds)
