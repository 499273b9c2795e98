"""A client's Java-named metrics: the parts that count (sources) under one window."""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable
from typing import Protocol

from aiokafka_lead.telemetry.names import MetricSet
from aiokafka_lead.telemetry.window import Clock, Peak, Window


class MetricSource(Protocol):
    """A part of a client that counts: its cumulative counters, its peaks, and the metrics
    it derives from a read."""

    def counters(self, out: dict[Hashable, float]) -> None: ...

    def peaks(self) -> Iterable[Peak]: ...

    def emit(self, metrics: MetricSet) -> None: ...


class MetricsRegistry:
    """The sources of one client under one :class:`Window`; :meth:`read` gives its metrics."""

    def __init__(self, client_id: str, client_type: str, *, clock: Clock = time.monotonic) -> None:
        self.client_id = client_id
        self.client_type = client_type
        self._sources: list[MetricSource] = []
        self.window = Window(self._counters, self._peaks, clock=clock)

    def add(self, source: MetricSource) -> None:
        self._sources.append(source)

    def _counters(self) -> dict[Hashable, float]:
        out: dict[Hashable, float] = {}
        for source in self._sources:
            source.counters(out)
        return out

    def _peaks(self) -> list[Peak]:
        return [p for source in self._sources for p in source.peaks()]

    def read(self) -> MetricSet:
        metrics = MetricSet(self.client_id, self.client_type, self.window.read())
        for source in self._sources:
            source.emit(metrics)
        return metrics
