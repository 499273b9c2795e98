"""Retrying a request until its deadline: one mechanism for admin calls and offset lookups.

An attempt raises a :class:`KafkaError`; retriable ones are tried again after an
exponential, jittered backoff, and those that mean "stale metadata" (``invalid_metadata``)
also refresh metadata first. Non-retriable errors surface at once. When the deadline
passes, :class:`KafkaTimeoutError` names the operation and the last error: never a silent
retry loop, never an unbounded wait.

Used by the admin calls, FindCoordinator / InitProducerId and the transaction coordinator's
requests. The other waits in the package are not "one call until a deadline" and keep their
own loops: background loops that never end (metadata refresher, group join and heartbeat
loops, the sender's epoch bump), per-partition backoff inside the fetcher's and offset
lookup's plans, an offset commit (partial progress, waits for the member's next identity),
CONCURRENT_TRANSACTIONS (a fixed 20 ms, a few times, inside this helper's attempt), waiting
for a topic to appear or a change to reach every broker (conditions, not errors; the latter
only warns).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.errors import KafkaError, KafkaTimeoutError
from aiokafka_lead.ratelog import RateLimitedLog

log = logging.getLogger(__name__)
#: one WARNING per operation that gives up, at most once a minute for the same one
_warn = RateLimitedLog(log)

T = TypeVar("T")


async def call_with_retries(
    what: str,
    attempt: Callable[[], Awaitable[T]],
    *,
    timeout_ms: float,
    backoff: ExponentialBackoff,
    refresh: Callable[[str], Awaitable[object]] | None = None,
    waiting_on: Callable[[], str | None] | None = None,
) -> T:
    """Run ``attempt`` until it returns, fails for good, or ``timeout_ms`` runs out;
    ``waiting_on()`` names the broker an attempt cut by the deadline was waiting on."""
    deadline = time.monotonic() + timeout_ms / 1000
    failures = 0
    last: KafkaError | None = None
    unanswered = ""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            with anyio.fail_after(remaining):
                return await attempt()
        except TimeoutError:
            broker = waiting_on() if waiting_on is not None else None
            unanswered = f"; no answer from {broker}" if broker else ""
            break
        except KafkaError as exc:
            if not exc.retriable:
                raise
            last = exc
        log.debug("%s: retriable error %r (attempt %d)", what, last, failures + 1)
        delay = min(backoff.delay_s(failures), max(deadline - time.monotonic(), 0))
        failures += 1
        await anyio.sleep(delay)
        if refresh is not None and last is not None and last.invalid_metadata:
            try:
                with anyio.fail_after(max(deadline - time.monotonic(), 0.001)):
                    await refresh(f"{what}: {type(last).__name__}")
            except (KafkaError, TimeoutError) as exc:
                log.debug("%s: metadata refresh failed: %r", what, exc)
    detail = f"; last error: {last!r}" if last is not None else ""
    _warn.warning(what, "%s: giving up after %d attempt(s) in %.0f ms%s", what, failures, timeout_ms, detail)
    raise KafkaTimeoutError(f"{what} did not complete within {timeout_ms:.0f} ms{unanswered}{detail}")
