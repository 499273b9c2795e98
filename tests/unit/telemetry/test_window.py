"""Java's sampled window (MetricConfig: 2 samples of 30 s) over cumulative counters."""

from __future__ import annotations

import math
from collections.abc import Hashable

import pytest

from aiokafka_lead.telemetry.names import CATALOG, MetricSet
from aiokafka_lead.telemetry.window import Peak, Window


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make() -> tuple[Window, dict[Hashable, float], Peak, Clock]:
    counters: dict[Hashable, float] = {}
    peak = Peak()
    clock = Clock()
    return Window(lambda: counters, lambda: [peak], clock=clock), counters, peak, clock


def test_a_young_client_counts_one_whole_window_more() -> None:
    window, counters, _, clock = make()
    counters["n"] = 100
    clock.now += 5
    # Java's Rate.windowSize: 5 s elapsed, less than samples - 1 = 1 full window: + 30 s
    assert window.read().rate("n") == pytest.approx(100 / 35)
    clock.now += 25  # 30 s: one full window, counted as it is
    assert window.read().rate("n") == pytest.approx(100 / 30)


def test_windows_older_than_two_are_dropped() -> None:
    window, counters, _, clock = make()
    counters["n"] = 60
    clock.now += 30
    assert window.read().rate("n") == pytest.approx(2.0)  # closes the first window at t=30
    counters["n"] = 90
    clock.now += 30
    assert window.read().rate("n") == pytest.approx(90 / 60)  # both windows, closes at t=60
    counters["n"] = 93
    clock.now += 10  # t=70: the window that began at 0 is out; counted from t=30
    assert window.read().rate("n") == pytest.approx((93 - 60) / 40)
    assert window.read().total("n") == 93


def test_average_and_peak() -> None:
    window, counters, peak, clock = make()
    assert math.isnan(window.read().avg("s", "c"))
    assert math.isnan(peak.value())
    counters.update(s=30.0, c=3)
    peak.record(20.0)
    assert window.read().avg("s", "c") == 10.0
    clock.now += 30
    window.read()  # closes the window: the peak moves to the previous one
    assert peak.value() == 20.0
    peak.record(5.0)
    assert peak.value() == 20.0
    clock.now += 30
    window.read()  # a second close: the 20 is two windows old
    assert peak.value() == 5.0
    clock.now += 30
    window.read()
    assert math.isnan(peak.value())


def test_per_hour() -> None:
    window, counters, _, clock = make()
    counters["r"] = 2
    clock.now += 60
    assert window.read().rate("r", per_s=3600) == pytest.approx(120.0)


def test_a_metric_must_be_in_the_catalogue_with_its_tags() -> None:
    window, *_ = make()
    m = MetricSet("c", "producer", window.read())
    m.add("producer-metrics", "connection-count", 1)
    m.add("producer-node-metrics", "outgoing-byte-total", 5, node_id="node-1")
    assert ("{type}-metrics", "connection-count") in CATALOG
    with pytest.raises(KeyError):
        m.add("producer-metrics", "no-such-metric", 1)
    with pytest.raises(ValueError):
        m.add("producer-node-metrics", "outgoing-byte-total", 5)
    assert m.by_group() == {
        "producer-metrics": {"connection-count": 1.0},
        "producer-node-metrics,node-id=node-1": {"outgoing-byte-total": 5.0},
    }
