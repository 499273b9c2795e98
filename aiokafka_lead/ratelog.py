"""Warnings an operator can read: one line per problem per interval, not one per retry.

A broker that keeps failing, a partition that stays without a leader or a broker that
keeps sending a bad answer would otherwise log on every attempt (several a second) or
not at all. :class:`RateLimitedLog` logs the first occurrence of a problem (by key) at
WARNING, counts the repeats, and logs again, with the count, once the interval has passed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable

#: how often one problem is logged again while it lasts
DEFAULT_INTERVAL_S = 60.0
#: at most this many problems remembered (the oldest is forgotten first)
MAX_KEYS = 1024


class RateLimitedLog:
    """WARNING at most once per ``interval_s`` for each key; repeats go to DEBUG."""

    def __init__(
        self,
        logger: logging.Logger,
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._interval_s = interval_s
        self._clock = clock
        self._last: dict[Hashable, tuple[float, int]] = {}  # key -> (logged at, repeats since)

    def warning(self, key: Hashable, message: str, *args: object) -> bool:
        """Log ``message % args`` at WARNING unless ``key`` was logged within the interval;
        returns whether it was logged at WARNING."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last[0] < self._interval_s:
            self._last[key] = (last[0], last[1] + 1)
            self._log.debug(message, *args)
            return False
        repeats = last[1] if last is not None else 0
        if repeats:
            message += " (%d more time(s) in the last %.0f s)"
            args = (*args, repeats, now - last[0]) if last is not None else args
        self._last.pop(key, None)
        self._last[key] = (now, 0)
        if len(self._last) > MAX_KEYS:
            del self._last[next(iter(self._last))]
        self._log.warning(message, *args)
        return True

    def clear(self, key: Hashable) -> None:
        """The problem is over: its next occurrence logs at once."""
        self._last.pop(key, None)
