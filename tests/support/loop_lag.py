"""How long the event loop was blocked, and a hang turned into a test failure.

``async with watch_loop() as watch:`` runs a ticker task that sleeps ``TICK_S`` and
records how late it woke (the loop was busy with something else meanwhile: its lag) and how
much CPU time this thread spent in that late tick (its block: a loaded machine that leaves
the process waiting for a core makes lag, not block), and
a SIGALRM watchdog: if the ticker has not run for ``hang_s``, the signal handler raises
:class:`LoopBlocked` in whatever code holds the loop (a loop over 2**31 indexes, say), so
the test fails with that code's traceback instead of hanging the suite. Leaving the block
stops both; ``watch.max_lag_s`` is the longest lag seen and ``watch.worst`` where.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import FrameType

import anyio

TICK_S = 0.01
#: the most CPU one callback may hold the loop for before a test fails. The client's goal is
#: 100 ms (benchmarks/metadata_scale.py measures it, docs/benchmarks.md reports it); on a
#: loaded 2-core CI machine a collection or a first import inside a callback has shown
#: 150 ms, so the tests fail at what is a freeze, not at noise.
MAX_BLOCK_S = 0.5


class LoopBlocked(Exception):
    """The event loop did not run for the watchdog's limit."""


@dataclass
class LoopWatch:
    max_lag_s: float = 0.0  # wall clock: includes time the OS gave the core to others
    max_block_s: float = 0.0  # this thread's CPU time within one late tick
    ticks: int = 0
    last_tick: float = 0.0

    def assert_responsive(self, limit_s: float = MAX_BLOCK_S) -> None:
        assert self.max_block_s <= limit_s, (
            f"the event loop was blocked for {self.max_block_s * 1000:.0f} ms of CPU "
            f"(limit {limit_s * 1000:.0f} ms; longest wall-clock lag {self.max_lag_s * 1000:.0f} ms)"
        )


@asynccontextmanager
async def watch_loop(*, hang_s: float = 3.0) -> AsyncIterator[LoopWatch]:
    watch = LoopWatch(last_tick=time.monotonic())
    main = threading.current_thread() is threading.main_thread()

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        stalled = time.monotonic() - watch.last_tick
        if stalled > hang_s:
            watch.last_tick = time.monotonic()  # one raise per hang
            raise LoopBlocked(f"the event loop has not run for {stalled:.1f} s")

    async def tick() -> None:
        while True:
            before, cpu_before = time.monotonic(), time.thread_time()
            await anyio.sleep(TICK_S)
            now = time.monotonic()
            lag = now - before - TICK_S
            if lag > watch.max_lag_s:
                watch.max_lag_s = lag
            busy = time.thread_time() - cpu_before
            if lag > TICK_S and busy > watch.max_block_s:
                watch.max_block_s = min(busy, lag + TICK_S)
            watch.ticks += 1
            watch.last_tick = now

    previous = signal.signal(signal.SIGALRM, on_alarm) if main else None
    if main:
        signal.setitimer(signal.ITIMER_REAL, 0.25, 0.25)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            try:
                yield watch
            finally:
                tg.cancel_scope.cancel()
    finally:
        if main:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, previous)
