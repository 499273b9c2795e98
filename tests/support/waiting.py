"""Waiting on a condition: poll it until it holds, within the caller's deadline.

One helper for every test: ``predicate`` is a plain function (a client-side state, cheap
to read: polled every 5 ms) or returns an awaitable (a question to an external system:
polled every 100 ms); ``interval`` overrides either. The deadline is the caller's cancel
scope (``with anyio.fail_after(seconds): await eventually(...)``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import anyio

LOCAL_INTERVAL = 0.005
REMOTE_INTERVAL = 0.1


async def eventually(
    predicate: Callable[[], object],
    *,
    interval: float | None = None,
) -> None:
    """Return once ``predicate()`` is true (the caller bounds the wait)."""
    while True:
        result = predicate()
        remote = inspect.isawaitable(result)
        if remote:
            result = await result  # type: ignore[misc]
        if result:
            return
        pause = interval if interval is not None else REMOTE_INTERVAL if remote else LOCAL_INTERVAL
        await anyio.sleep(pause)
