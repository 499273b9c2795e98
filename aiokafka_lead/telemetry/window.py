"""Rates, averages and maxima over the Java client's window, from cumulative counters.

The hot paths only add to counters (``x.total += n``) and keep a running maximum
(:class:`Peak`); everything derived is computed when the metrics are read. Java's
``MetricConfig`` keeps ``samples=2`` windows of 30 s: a rate is what was recorded in them
divided by the time they span, counted as at least one whole window (so a client 5 s old
that sent 100 records reports 100 / 35 s). Here a window closes when the metrics are read
30 s or more after the previous close (a KIP-714 push reads them at every push): the rate
covers the closed windows of the last 60 s plus the open one. Read less often, it covers
the time since the previous read.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Hashable, Mapping

#: Java's ``MetricConfig`` defaults: ``metrics.num.samples`` and ``metrics.sample.window.ms``
SAMPLES = 2
WINDOW_S = 30.0

Clock = Callable[[], float]


class Peak:
    """The largest value recorded in the open window and in the one before it."""

    __slots__ = ("current", "previous")

    def __init__(self) -> None:
        self.current = -math.inf
        self.previous = -math.inf

    def record(self, value: float) -> None:
        self.current = max(self.current, value)

    def roll(self) -> None:
        self.previous, self.current = self.current, -math.inf

    def value(self) -> float:
        """The maximum, NaN when nothing was recorded (Java's ``Max`` without samples)."""
        best = max(self.current, self.previous)
        return best if best > -math.inf else math.nan


class Window:
    """The windows over a set of cumulative counters, read through :meth:`read`."""

    def __init__(
        self,
        counters: Callable[[], Mapping[Hashable, float]],
        peaks: Callable[[], list[Peak]],
        *,
        clock: Clock = time.monotonic,
        samples: int = SAMPLES,
        window_s: float = WINDOW_S,
    ) -> None:
        self._counters = counters
        self._peaks = peaks
        self.clock = clock
        self._samples = samples
        self._window_s = window_s
        self._marks: deque[tuple[float, dict[Hashable, float]]] = deque([(clock(), {})])

    def restart(self, clock: Clock | None = None) -> None:
        """Count from now (with another clock): the windows start empty, the totals stay."""
        if clock is not None:
            self.clock = clock
        self._marks = deque([(self.clock(), dict(self._counters()))])

    def read(self) -> Reading:
        """The counters now against the oldest window still counted; closes the open window
        when it is a window old."""
        now = self.clock()
        values = dict(self._counters())
        horizon = now - self._samples * self._window_s
        while len(self._marks) > 1 and self._marks[0][0] < horizon:
            self._marks.popleft()
        start, base = self._marks[0]
        elapsed = now - start
        # Java's Rate.windowSize: at least samples - 1 whole windows
        full = int(elapsed // self._window_s)
        if full < self._samples - 1:
            elapsed += (self._samples - 1 - full) * self._window_s
        reading = Reading(values, base, elapsed)
        if now - self._marks[-1][0] >= self._window_s:
            self._marks.append((now, values))
            for peak in self._peaks():
                peak.roll()
        return reading


class Reading:
    """One read of the counters: totals, rates, averages."""

    __slots__ = ("_base", "_values", "elapsed_s")

    def __init__(self, values: dict[Hashable, float], base: dict[Hashable, float], elapsed_s: float) -> None:
        self._values = values
        self._base = base
        self.elapsed_s = elapsed_s

    def total(self, key: Hashable) -> float:
        return self._values.get(key, 0)

    def delta(self, key: Hashable) -> float:
        return self._values.get(key, 0) - self._base.get(key, 0)

    def rate(self, key: Hashable, per_s: float = 1.0) -> float:
        """Per second (``per_s=3600``: per hour) over the counted windows."""
        return self.delta(key) / self.elapsed_s * per_s

    def avg(self, sum_key: Hashable, count_key: Hashable) -> float:
        """Mean of what was recorded in the counted windows; NaN when nothing was (as Java's ``Avg``)."""
        count = self.delta(count_key)
        return self.delta(sum_key) / count if count else math.nan
