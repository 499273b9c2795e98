"""The consumer's Java-named metrics: ``consumer-fetch-manager-metrics`` (fetches, bytes,
records handed out, lag per partition) and the ``assigned-partitions`` gauge of
``consumer-coordinator-metrics``, derived from the fetcher's counters when read."""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from aiokafka_lead.consumer.fetch_response import FetchStats
from aiokafka_lead.consumer.subscription import SubscriptionState
from aiokafka_lead.telemetry.names import COORDINATOR, FETCH_MANAGER, MetricSet
from aiokafka_lead.telemetry.window import Peak


class ConsumerMetricSource:
    """A :class:`~aiokafka_lead.telemetry.registry.MetricSource` over the fetcher and the assignment."""

    def __init__(self, stats: FetchStats, subs: SubscriptionState, *, in_group: bool) -> None:
        self._stats = stats
        self._subs = subs
        self._in_group = in_group

    def counters(self, out: dict[Hashable, float]) -> None:
        s = self._stats
        out[("fetch", "requests")] = s.answers
        out[("fetch-latency", "sum")] = s.latency_s
        out[("fetch-latency", "count")] = s.answers
        out[("fetch", "bytes")] = s.bytes_fetched
        out[("fetch", "records")] = s.records_consumed

    def peaks(self) -> Iterable[Peak]:
        return (self._stats.latency_peak,)

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
            if st is None or st.position is None or st.highwater is None:
                continue
            lag = max(st.highwater - st.position, 0)
            lags.append(lag)
            m.add(FETCH_MANAGER, "records-lag", lag, topic=tp.topic, partition=tp.partition)
        if lags:
            m.add(FETCH_MANAGER, "records-lag-max", max(lags))
        if self._in_group:
            m.add(COORDINATOR, "assigned-partitions", len(self._subs.assigned()))
