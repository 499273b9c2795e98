"""A sticky wake-up flag that one task waits on, with a timeout: the sleep of the producer's
sender, of the fetchers' planning loops and of a request waiting for its answer.

These waits happen several times per produce request, so their cost is per request. On
asyncio a wait is one bare loop future, plus one timer when it has a timeout; anyio's
``Event`` with ``move_on_after`` costs several times that (a cancel scope, the backend's
look-up, a task's cancel bookkeeping). Other anyio backends (trio) get exactly those.

Cancellation is the caller's as usual: a cancelled waiter raises out of :meth:`wait`, and
anyio's cancel scopes cancel a task awaiting a bare future like any other await.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

import anyio

#: an asyncio timer may run up to the loop's clock resolution before its time
_EARLY_S = 1e-6


def asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop; None off asyncio (trio) or outside a loop."""
    return asyncio._get_running_loop()  # get_running_loop() without raising when there is none


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Alarm:
    """One asyncio timer for many deadlines: :meth:`arm_by` moves it earlier, never later,
    so deadlines that come later than the armed one cost nothing. Once due it is disarmed
    and calls ``ring(loop)``, which arms it again if deadlines are left."""

    __slots__ = ("_handle", "_ring", "at")

    def __init__(self, ring: Callable[[asyncio.AbstractEventLoop], None]) -> None:
        self._ring = ring
        self._handle: asyncio.TimerHandle | None = None
        self.at = math.inf  # the loop time it rings at (inf: not armed)

    def arm_by(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        """Ring at ``when`` (loop time) at the latest."""
        if when < self.at:
            if self._handle is not None:
                self._handle.cancel()
            self.at = when
            self._handle = loop.call_at(when, self._fire, loop)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle, self.at = None, math.inf

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._handle, self.at = None, math.inf
        self._ring(loop)


class Wakeup:
    """Set by anyone, any number of times; :meth:`wait` returns once it is set (at once if it
    already is) or after ``timeout_s``. It stays set until :meth:`clear`, so a wake that comes
    between a waiter's work and its next wait is not lost. One waiter at a time.

    ``keep_timer``: for a loop's sleep, waited on again and again with deadlines that mostly
    lie further out each time (the sender's next batch expiry). The asyncio timer of one
    wait then stays armed for the next ones, and is replaced only for an earlier deadline;
    a wait it rings for too early waits on. Without it each wait's timer is cancelled when
    the wait ends (a one-off wait must not leave its timer in the loop's heap)."""

    __slots__ = ("_alarm", "_deadline", "_set", "_set_at", "_waiter")

    def __init__(self, *, keep_timer: bool = False) -> None:
        self._set = False
        self._set_at = math.inf  # set_at()'s time, until it comes or clear()
        self._waiter: asyncio.Future[None] | anyio.Event | None = None
        self._alarm = Alarm(self._ring) if keep_timer else None
        self._deadline = math.inf  # keep_timer: when the wait under way times out

    def set(self) -> None:
        self._set = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if isinstance(waiter, asyncio.Future):
                _resolve(waiter)
            else:
                waiter.set()

    def set_at(self, when: float) -> None:
        """:meth:`set` at ``when`` (``time.monotonic()``, the asyncio loop's clock), through the
        kept timer, unless a :meth:`clear` comes first; the earliest of several calls counts.
        At once when ``when`` has passed, without ``keep_timer`` or off asyncio."""
        if self._set or when >= self._set_at:
            return
        loop = asyncio_loop()
        alarm = self._alarm
        if alarm is None or loop is None or when <= loop.time():
            self.set()
        else:
            self._set_at = when
            alarm.arm_by(loop, when)

    def is_set(self) -> bool:
        return self._set

    def clear(self) -> None:
        self._set = False
        self._set_at = math.inf

    async def wait(self, timeout_s: float | None = None) -> bool:
        """Until set or ``timeout_s`` passed (None: no limit); True when set. Does not clear;
        returns without yielding to the event loop when already set."""
        if self._set:
            return True
        loop = asyncio_loop()
        if loop is None:
            event = anyio.Event()
            self._waiter = event
            try:
                with anyio.move_on_after(timeout_s):
                    await event.wait()
            finally:
                if self._waiter is event:
                    self._waiter = None
            return self._set
        alarm = self._alarm
        if alarm is None:
            future = loop.create_future()
            self._waiter = future
            timer = None if timeout_s is None else loop.call_later(max(timeout_s, 0.0), _resolve, future)
            try:
                await future
            finally:
                if self._waiter is future:
                    self._waiter = None
                if timer is not None:
                    timer.cancel()
            return self._set
        self._deadline = math.inf if timeout_s is None else loop.time() + max(timeout_s, 0.0)
        while True:
            alarm.arm_by(loop, self._deadline)
            future = loop.create_future()
            self._waiter = future
            try:
                await future
            finally:
                if self._waiter is future:
                    self._waiter = None
            if self._set or loop.time() >= self._deadline:
                return self._set
            # the timer of an earlier deadline rang (or retime() moved this one): wait on

    def retime(self, when: float) -> None:
        """The wait under way times out at ``when`` (``time.monotonic()``; inf: never)
        instead of its own timeout, and a :meth:`set_at` still to come is dropped: the
        waiter's work was done for it meanwhile, and decided when it is due next.
        ``keep_timer`` waits on asyncio only; else nothing."""
        alarm = self._alarm
        if alarm is None or not isinstance(self._waiter, asyncio.Future):
            return
        self._deadline = when
        self._set_at = math.inf
        loop = asyncio_loop()
        if loop is not None and when != math.inf:
            alarm.arm_by(loop, when)

    def _ring(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._set_at != math.inf:
            if loop.time() + _EARLY_S >= self._set_at:
                self._set_at = math.inf
                self.set()
                return
            assert self._alarm is not None
            self._alarm.arm_by(loop, self._set_at)  # it rang for an earlier deadline
        waiter = self._waiter
        if isinstance(waiter, asyncio.Future):
            _resolve(waiter)


__all__ = ["Alarm", "Wakeup", "asyncio_loop"]
