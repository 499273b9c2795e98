"""The connections' counters (:class:`ConnectionStats`, shared by a pool's connections) and
their Java-named metrics (the ``{type}-metrics`` and ``{type}-node-metrics`` groups every
client has)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from aiokafka_lead.telemetry.names import MetricSet
from aiokafka_lead.telemetry.window import Peak

_METERS = (
    ("connection-creation", "created"),
    ("connection-close", "closed"),
    ("request", "requests"),
    ("response", "responses"),
    ("successful-authentication", "authentications"),
    ("failed-authentication", "failed_authentications"),
    ("successful-reauthentication", "reauthentications"),
    ("failed-reauthentication", "failed_reauthentications"),
)


@dataclass(slots=True)
class ConnectionStats:
    """Counters shared by a client's connections (its pool's), for metrics and tests."""

    #: SASL authentications when a connection opened
    authentications: int = 0
    #: KIP-368 re-authentications on live connections
    reauthentications: int = 0
    #: connections the broker closed (end of stream) while we still used them
    closed_by_broker: int = 0
    #: connections whose stream opened, and those of them closed since
    created: int = 0
    closed: int = 0
    failed_authentications: int = 0
    failed_reauthentications: int = 0
    requests: int = 0
    responses: int = 0
    #: per node id (-1 and below: bootstrap addresses): bytes sent, bytes received
    bytes_out: dict[int, int] = field(default_factory=dict)
    bytes_in: dict[int, int] = field(default_factory=dict)
    #: per node id: answered requests' round trips (sum, count and window peak, seconds)
    latency_sum: dict[int, float] = field(default_factory=dict)
    latency_count: dict[int, int] = field(default_factory=dict)
    latency_peak: dict[int, Peak] = field(default_factory=dict)

    def answered(self, node_id: int, seconds: float) -> None:
        self.responses += 1
        self.latency_sum[node_id] = self.latency_sum.get(node_id, 0.0) + seconds
        self.latency_count[node_id] = self.latency_count.get(node_id, 0) + 1
        peak = self.latency_peak.get(node_id)
        if peak is None:
            peak = self.latency_peak[node_id] = Peak()
        peak.record(seconds)


class ConnectionMetrics:
    """A :class:`~aiokafka_lead.telemetry.registry.MetricSource` over a client's connections."""

    def __init__(self, stats: ConnectionStats) -> None:
        self._stats = stats

    def counters(self, out: dict[Hashable, float]) -> None:
        s = self._stats
        for _, attr in _METERS:
            out[("conn", attr)] = getattr(s, attr)
        out[("conn", "out")] = sum(s.bytes_out.values())
        out[("conn", "in")] = sum(s.bytes_in.values())
        for node, n in s.bytes_out.items():
            out[("node-out", node)] = n
        for node, n in s.bytes_in.items():
            out[("node-in", node)] = n
        for node, total in s.latency_sum.items():
            out[(("node-latency", node), "sum")] = total
            out[(("node-latency", node), "count")] = s.latency_count[node]

    def peaks(self) -> Iterable[Peak]:
        return self._stats.latency_peak.values()

    def emit(self, m: MetricSet) -> None:
        s = self._stats
        group = f"{m.client_type}-metrics"
        m.add(group, "connection-count", s.created - s.closed)
        for base, attr in _METERS:
            m.meter(group, base, ("conn", attr))
        m.meter(group, "outgoing-byte", ("conn", "out"))
        m.meter(group, "incoming-byte", ("conn", "in"))
        node_group = f"{m.client_type}-node-metrics"
        for node in sorted(s.bytes_out.keys() | s.bytes_in.keys()):
            tag = f"node-{node}"
            m.meter(node_group, "outgoing-byte", ("node-out", node), node_id=tag)
            m.meter(node_group, "incoming-byte", ("node-in", node), node_id=tag)
            m.avg_max(
                node_group,
                "request-latency",
                ("node-latency", node),
                s.latency_peak.get(node),
                1000.0,
                node_id=tag,
            )
