"""Long work on the event loop, cut into slices.

Some work of a client grows with the cluster: walking a Metadata answer of a million
partitions, merging it into the store. Written as a generator that yields now and then
(every few hundred items), the same code runs at once (:func:`run_to_end`, for callers that
must not await) or gives the event loop a turn every ``SLICE_S`` (:func:`run_in_slices`). A
worker thread would not do: the loop would wait for the interpreter lock at every system
call while the thread runs Python code.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import TypeVar

import anyio.lowlevel

T = TypeVar("T")

#: the longest a sliced piece of work holds the event loop before it gives it a turn
SLICE_S = 0.01


class _Running:
    """What :func:`_advance` returns while the work is not done."""


_RUNNING = _Running()


def _advance(work: Generator[None, None, T]) -> T | _Running:
    """One step of the work: its return value once it is done, else ``_RUNNING``."""
    try:
        next(work)
    except StopIteration as done:
        result: T = done.value
        return result
    return _RUNNING


def run_to_end(work: Generator[None, None, T]) -> T:
    """The generator's return value, run without a pause."""
    while isinstance(result := _advance(work), _Running):
        pass
    return result


async def run_in_slices(work: Generator[None, None, T], slice_s: float | None = None) -> T:
    """The generator's return value, giving the event loop a turn every ``slice_s``
    (default ``SLICE_S``)."""
    slice_s = SLICE_S if slice_s is None else slice_s
    turn_at = time.monotonic() + slice_s
    while isinstance(result := _advance(work), _Running):
        if time.monotonic() >= turn_at:
            await anyio.lowlevel.checkpoint()
            turn_at = time.monotonic() + slice_s
    return result


__all__ = ["SLICE_S", "run_in_slices", "run_to_end"]
