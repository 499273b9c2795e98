"""Waiting on conditions with a deadline: tests and the cluster never sleep blindly."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(TimeoutError):
    """A condition did not become true before its deadline."""


def wait_until(
    predicate: Callable[[], T | None],
    timeout: float,
    what: str,
    *,
    interval: float = 0.2,
    max_interval: float = 1.0,
) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that value.

    The poll interval backs off gently so a busy 2-core machine is not hammered; the
    error names ``what`` was awaited, which is the useful part of a failing test.
    """
    deadline = time.monotonic() + timeout
    delay = interval
    while True:
        result = predicate()
        if result:
            return result
        now = time.monotonic()
        if now >= deadline:
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(min(delay, max(0.0, deadline - now)))
        delay = min(delay * 1.5, max_interval)
