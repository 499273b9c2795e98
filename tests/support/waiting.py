"""Waiting on a condition of an external system: poll it; bound the wait with ``anyio.fail_after``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio


async def eventually(predicate: Callable[[], Awaitable[bool]], *, interval: float = 0.1) -> None:
    """Return once ``predicate()`` is true; the caller's cancel scope is the deadline."""
    while True:
        if await predicate():
            return
        await anyio.sleep(interval)
