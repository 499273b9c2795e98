"""The share consumer's ``consumer-share-fetch-manager-metrics`` (Java's names), from the
share fetcher's counters when read."""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from aiokafka_lead.share.fetcher import ShareFetcher
from aiokafka_lead.telemetry.names import SHARE_FETCH_MANAGER, MetricSet
from aiokafka_lead.telemetry.window import Peak


class ShareMetricSource:
    """A :class:`~aiokafka_lead.telemetry.registry.MetricSource` over a :class:`ShareFetcher`."""

    def __init__(self, fetcher: ShareFetcher) -> None:
        self._fetcher = fetcher

    def counters(self, out: dict[Hashable, float]) -> None:
        f = self._fetcher
        out[("share", "fetches")] = f.fetches
        out[("share-latency", "sum")] = f.latency_s
        out[("share-latency", "count")] = f.fetches
        out[("share", "acquired")] = f.acquired

    def peaks(self) -> Iterable[Peak]:
        return (self._fetcher.latency_peak,)

    def emit(self, m: MetricSet) -> None:
        m.avg_max(SHARE_FETCH_MANAGER, "fetch-latency", "share-latency", self._fetcher.latency_peak, 1000.0)
        m.meter(SHARE_FETCH_MANAGER, "fetch", ("share", "fetches"))
        m.meter(SHARE_FETCH_MANAGER, "records-fetched", ("share", "acquired"))
        per_request = m.r.avg(("share", "acquired"), ("share", "fetches"))
        m.add(SHARE_FETCH_MANAGER, "records-per-request-avg", per_request)
