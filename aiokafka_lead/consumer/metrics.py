"""The consumer's Java-named metrics: ``consumer-fetch-manager-metrics`` (fetches, bytes,
records handed out, lag per partition) and the ``assigned-partitions`` gauge of
``consumer-coordinator-metrics``, derived from the fetcher's counters when read."""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from aiokafka_lead.consumer.fetch_response import FetchStats
from aiokafka_lead.consumer.subscription import SubscriptionState
from aiokafka_lead.telemetry.names import COORDINATOR, FETCH_MANAGER, MetricSet
from aiokafka_lead.telemetry.window import Peak


@dataclass(slots=True)
class GroupStats:
    """A group member's counters: commits, heartbeats, rebalances (both protocols)."""

    commits: int = 0
    commit_s: float = 0.0
    commit_peak: Peak = field(default_factory=Peak)
    heartbeats: int = 0
    last_heartbeat_at: float | None = None
    rebalances: int = 0
    rebalance_s: float = 0.0
    rebalance_peak: Peak = field(default_factory=Peak)
    rebalance_began: float | None = None

    def committed(self, seconds: float) -> None:
        self.commits += 1
        self.commit_s += seconds
        self.commit_peak.record(seconds)

    def heartbeat(self) -> None:
        self.heartbeats += 1
        self.last_heartbeat_at = time.monotonic()

    def rebalance_started(self) -> None:
        if self.rebalance_began is None:
            self.rebalance_began = time.monotonic()

    def rebalance_done(self) -> None:
        began, self.rebalance_began = self.rebalance_began, None
        if began is not None:
            seconds = time.monotonic() - began
            self.rebalances += 1
            self.rebalance_s += seconds
            self.rebalance_peak.record(seconds)


class ConsumerMetricSource:
    """A :class:`~aiokafka_lead.telemetry.registry.MetricSource` over the fetcher and the assignment."""

    def __init__(
        self, stats: FetchStats, subs: SubscriptionState, group: GroupStats | None, *, read_committed: bool
    ) -> None:
        self._stats = stats
        self._subs = subs
        self._group = group
        #: records-lag is measured to the last stable offset under read_committed (as Java's)
        self._read_committed = read_committed

    def counters(self, out: dict[Hashable, float]) -> None:
        s = self._stats
        out[("fetch", "requests")] = s.answers
        out[("fetch-latency", "sum")] = s.latency_s
        out[("fetch-latency", "count")] = s.answers
        out[("fetch", "bytes")] = s.bytes_fetched
        out[("fetch", "records")] = s.records_consumed
        g = self._group
        if g is not None:
            out[("commit", "sum")] = g.commit_s
            out[("commit", "count")] = g.commits
            out[("group", "heartbeats")] = g.heartbeats
            out[("rebalance", "sum")] = g.rebalance_s
            out[("rebalance", "count")] = g.rebalances

    def peaks(self) -> Iterable[Peak]:
        g = self._group
        group = (g.commit_peak, g.rebalance_peak) if g is not None else ()
        return (self._stats.latency_peak, *group)

    def emit(self, m: MetricSet) -> None:
        s = self._stats
        m.avg_max(FETCH_MANAGER, "fetch-latency", "fetch-latency", s.latency_peak, 1000.0)
        m.meter(FETCH_MANAGER, "fetch", ("fetch", "requests"))
        m.meter(FETCH_MANAGER, "bytes-consumed", ("fetch", "bytes"))
        m.meter(FETCH_MANAGER, "records-consumed", ("fetch", "records"))
        m.add(FETCH_MANAGER, "records-per-request-avg", m.r.avg(("fetch", "records"), ("fetch", "requests")))
        lags: list[int] = []
        for tp in sorted(self._subs.assigned()):
            st = self._subs.get(tp)
            end = None if st is None else st.last_stable_offset if self._read_committed else st.highwater
            if st is None or st.position is None or end is None:
                continue
            lag = max(end - st.position, 0)
            lags.append(lag)
            m.add(FETCH_MANAGER, "records-lag", lag, topic=tp.topic, partition=tp.partition)
        if lags:
            m.add(FETCH_MANAGER, "records-lag-max", max(lags))
        g = self._group
        if g is None:
            return
        m.add(COORDINATOR, "assigned-partitions", len(self._subs.assigned()))
        m.avg_max(COORDINATOR, "commit-latency", "commit", g.commit_peak, 1000.0)
        m.meter(COORDINATOR, "commit", ("commit", "count"))
        m.meter(COORDINATOR, "heartbeat", ("group", "heartbeats"))
        last = g.last_heartbeat_at
        ago = time.monotonic() - last if last is not None else math.nan
        m.add(COORDINATOR, "last-heartbeat-seconds-ago", ago)
        m.avg_max(COORDINATOR, "rebalance-latency", "rebalance", g.rebalance_peak, 1000.0)
        m.add(COORDINATOR, "rebalance-latency-total", g.rebalance_s * 1000)
        m.add(COORDINATOR, "rebalance-total", g.rebalances)
        m.add(COORDINATOR, "rebalance-rate-per-hour", m.r.rate(("rebalance", "count"), per_s=3600))
