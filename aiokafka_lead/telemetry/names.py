"""Java-named metrics: the catalogue (each metric declared once: group, name, unit, tags,
meaning) and :class:`MetricSet`, what a client's ``kafka_metrics()`` builds from a
:class:`~aiokafka_lead.telemetry.window.Reading`."""

from __future__ import annotations

import math
from typing import NamedTuple

from aiokafka_lead.telemetry.window import Peak, Reading


class MetricName(NamedTuple):
    """Java's ``MetricName``: name, group and tags (``client-id`` first)."""

    name: str
    group: str
    tags: tuple[tuple[str, str], ...]

    def tag(self, key: str) -> str | None:
        return next((v for k, v in self.tags if k == key), None)


class Spec(NamedTuple):
    unit: str
    tags: tuple[str, ...]
    doc: str


# ``{type}`` is the client's kind: producer, consumer, consumer-share, admin-client
_CONNECTION = "{type}-metrics"
_NODE = "{type}-node-metrics"
PRODUCER = "producer-metrics"
FETCH_MANAGER = "consumer-fetch-manager-metrics"
COORDINATOR = "consumer-coordinator-metrics"
SHARE_FETCH_MANAGER = "consumer-share-fetch-manager-metrics"


def _meter(
    group: str, base: str, unit: str, doc: str, tags: tuple[str, ...] = ()
) -> dict[tuple[str, str], Spec]:
    return {
        (group, f"{base}-rate"): Spec(f"{unit}/s", tags, f"{doc}, per second"),
        (group, f"{base}-total"): Spec(unit, tags, f"{doc}, in total"),
    }


def _avg_max(
    group: str, base: str, unit: str, doc: str, tags: tuple[str, ...] = ()
) -> dict[tuple[str, str], Spec]:
    return {
        (group, f"{base}-avg"): Spec(unit, tags, f"{doc}: mean"),
        (group, f"{base}-max"): Spec(unit, tags, f"{doc}: maximum"),
    }


NODE = ("node-id",)
PARTITION = ("topic", "partition")

#: (group, name) -> unit, tags beside client-id, meaning. Groups with ``{type}`` exist for every client.
CATALOG: dict[tuple[str, str], Spec] = {
    (_CONNECTION, "connection-count"): Spec("connections", (), "connections open now"),
    **_meter(_CONNECTION, "connection-creation", "connections", "connections opened"),
    **_meter(_CONNECTION, "connection-close", "connections", "connections closed"),
    **_meter(_CONNECTION, "outgoing-byte", "bytes", "bytes sent to all brokers"),
    **_meter(_CONNECTION, "incoming-byte", "bytes", "bytes received from all brokers"),
    **_meter(_CONNECTION, "request", "requests", "requests sent"),
    **_meter(_CONNECTION, "response", "responses", "responses received"),
    **_meter(_CONNECTION, "successful-authentication", "connections", "SASL authentications that succeeded"),
    **_meter(_CONNECTION, "failed-authentication", "connections", "SASL authentications that failed"),
    **_meter(
        _CONNECTION, "successful-reauthentication", "connections", "KIP-368 re-authentications that succeeded"
    ),
    **_meter(_CONNECTION, "failed-reauthentication", "connections", "KIP-368 re-authentications that failed"),
    **_meter(_NODE, "outgoing-byte", "bytes", "bytes sent to the node", NODE),
    **_meter(_NODE, "incoming-byte", "bytes", "bytes received from the node", NODE),
    **_avg_max(_NODE, "request-latency", "ms", "time from sending a request to the node to its answer", NODE),
    **_meter(PRODUCER, "record-send", "records", "records acknowledged by the brokers"),
    **_meter(PRODUCER, "record-error", "records", "records that failed (error or delivery timeout)"),
    **_meter(PRODUCER, "record-retry", "records", "records sent again after a failed attempt"),
    **_avg_max(PRODUCER, "request-latency", "ms", "Produce request round trip"),
    **_avg_max(
        PRODUCER, "record-queue-time", "ms", "time a batch waited in the accumulator before it was sent"
    ),
    **_avg_max(PRODUCER, "batch-size", "bytes", "bytes of a batch as sent"),
    **_avg_max(
        PRODUCER, "produce-throttle-time", "ms", "throttle time the brokers asked for in Produce answers"
    ),
    (PRODUCER, "records-per-request-avg"): Spec("records", (), "records per Produce request: mean"),
    (PRODUCER, "compression-rate-avg"): Spec(
        "ratio", (), "compressed size / uncompressed size of a batch's records: mean (1.0 uncompressed)"
    ),
    (PRODUCER, "buffer-available-bytes"): Spec(
        "bytes", (), "room left in the buffer (buffer_memory minus queued bytes)"
    ),
    (PRODUCER, "buffer-total-bytes"): Spec("bytes", (), "the buffer's size (buffer_memory)"),
    **_meter(PRODUCER, "batch-split", "batches", "batches refused as too large and split"),
    (FETCH_MANAGER, "records-lag-max"): Spec(
        "records",
        (),
        "largest lag (high watermark, or last stable offset under read_committed, minus position) "
        "of the assigned partitions",
    ),
    (FETCH_MANAGER, "records-lag"): Spec(
        "records",
        PARTITION,
        "the partition's lag: high watermark (last stable offset under read_committed) minus position",
    ),
    **_avg_max(FETCH_MANAGER, "fetch-latency", "ms", "Fetch request round trip"),
    **_meter(FETCH_MANAGER, "fetch", "requests", "Fetch requests answered"),
    **_meter(FETCH_MANAGER, "bytes-consumed", "bytes", "record bytes fetched for the application"),
    **_meter(FETCH_MANAGER, "records-consumed", "records", "records handed to the application"),
    (FETCH_MANAGER, "records-per-request-avg"): Spec(
        "records", (), "records handed to the application per Fetch answer: mean"
    ),
    (COORDINATOR, "assigned-partitions"): Spec("partitions", (), "partitions assigned to this member now"),
    **_avg_max(COORDINATOR, "commit-latency", "ms", "OffsetCommit round trip"),
    **_meter(COORDINATOR, "commit", "commits", "offset commits answered"),
    (COORDINATOR, "last-heartbeat-seconds-ago"): Spec(
        "s", (), "time since the last heartbeat answer (NaN before the first)"
    ),
    **_meter(COORDINATOR, "heartbeat", "heartbeats", "heartbeats answered"),
    **_avg_max(COORDINATOR, "rebalance-latency", "ms", "time from joining to owning the new assignment"),
    (COORDINATOR, "rebalance-latency-total"): Spec("ms", (), "time spent in rebalances, in total"),
    (COORDINATOR, "rebalance-rate-per-hour"): Spec("rebalances/h", (), "rebalances completed, per hour"),
    (COORDINATOR, "rebalance-total"): Spec("rebalances", (), "rebalances completed, in total"),
    **_avg_max(SHARE_FETCH_MANAGER, "fetch-latency", "ms", "ShareFetch request round trip"),
    **_meter(SHARE_FETCH_MANAGER, "fetch", "requests", "ShareFetch requests answered"),
    **_meter(SHARE_FETCH_MANAGER, "records-fetched", "records", "records acquired through ShareFetch"),
    (SHARE_FETCH_MANAGER, "records-per-request-avg"): Spec(
        "records", (), "records acquired per ShareFetch answer: mean"
    ),
}


def spec_of(group: str, name: str, client_type: str) -> Spec | None:
    """The declaration of a client's metric: its own group's, or the ``{type}`` group's."""
    if group.startswith(client_type + "-"):
        spec = CATALOG.get(("{type}" + group[len(client_type) :], name))
        if spec is not None:
            return spec
    return CATALOG.get((group, name))


class MetricSet:
    """The metrics of one read, in catalogue order of emission."""

    def __init__(self, client_id: str, client_type: str, reading: Reading) -> None:
        self.client_id = client_id
        self.client_type = client_type
        self.r = reading
        self.values: dict[MetricName, float] = {}

    def add(self, group: str, name: str, value: float, **tags: object) -> None:
        spec = spec_of(group, name, self.client_type)
        if spec is None:
            raise KeyError(f"{group}/{name} is not in the catalogue")
        if tuple(t.replace("-", "_") for t in spec.tags) != tuple(tags):
            raise ValueError(f"{group}/{name}: tags {tuple(tags)} against {spec.tags}")
        pairs = (("client-id", self.client_id), *((k.replace("_", "-"), str(v)) for k, v in tags.items()))
        self.values[MetricName(name, group, pairs)] = float(value)

    def meter(self, group: str, base: str, key: object, **tags: object) -> None:
        """``{base}-rate`` and ``{base}-total`` of a counter."""
        self.add(group, f"{base}-rate", self.r.rate(key), **tags)
        self.add(group, f"{base}-total", self.r.total(key), **tags)

    def avg_max(
        self, group: str, base: str, key: object, peak: Peak | None, scale: float = 1.0, **tags: object
    ) -> None:
        """``{base}-avg`` of ``(key, "sum")`` / ``(key, "count")`` and ``{base}-max`` of the peak."""
        self.add(group, f"{base}-avg", self.r.avg((key, "sum"), (key, "count")) * scale, **tags)
        self.add(group, f"{base}-max", (peak.value() if peak is not None else math.nan) * scale, **tags)

    def by_group(self) -> dict[str, dict[str, float]]:
        """The shape ``metrics()["kafka"]`` has: ``"group[,tag=value...]" -> {name: value}``
        (client-id left out: it is the client's)."""
        out: dict[str, dict[str, float]] = {}
        for m, value in self.values.items():
            key = ",".join([m.group, *(f"{k}={v}" for k, v in m.tags[1:])])
            out.setdefault(key, {})[m.name] = value
        return out
