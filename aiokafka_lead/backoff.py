"""Exponential backoff with jitter, as the Java client computes it (KIP-580).

``initial * 2**attempts``, capped at ``maximum``, times a uniform factor in
``[1 - jitter, 1 + jitter]``. Shared by reconnects, produce retries and ListOffsets.
``KeyedBackoff`` counts the failures in a row of each of several things (nodes) and when
each may be tried again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Hashable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ExponentialBackoff:
    initial_ms: float
    maximum_ms: float
    multiplier: float = 2.0
    jitter: float = 0.2
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def delay_ms(self, attempts: int) -> float:
        """Backoff before retry number ``attempts + 1`` (``attempts`` failures so far)."""
        if self.initial_ms <= 0:
            return 0.0
        exp = min(max(attempts, 0), 64)
        term = min(self.initial_ms * self.multiplier**exp, self.maximum_ms)
        if self.jitter <= 0 or term <= 0:
            return term
        factor = self.rng.uniform(1 - self.jitter, 1 + self.jitter)
        return min(term * factor, self.maximum_ms * (1 + self.jitter))

    def delay_s(self, attempts: int) -> float:
        return self.delay_ms(attempts) / 1000.0


class KeyedBackoff:
    """Failures in a row per key, and the time (``time.monotonic()``) each may be tried again."""

    def __init__(self, backoff: ExponentialBackoff) -> None:
        self._backoff = backoff
        self._failures: dict[Hashable, int] = {}
        self._retry_at: dict[Hashable, float] = {}

    def outcome(self, key: Hashable, *, ok: bool) -> None:
        """A try of ``key`` succeeded (its count starts over) or failed (it backs off)."""
        if ok:
            self._failures.pop(key, None)
            self._retry_at.pop(key, None)
        else:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            self._retry_at[key] = time.monotonic() + self._backoff.delay_s(failures)

    def failures(self, key: Hashable) -> int:
        return self._failures.get(key, 0)

    def retry_at(self, key: Hashable) -> float:
        return self._retry_at.get(key, 0.0)
