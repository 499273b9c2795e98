"""Hosting a client's task group across aiokafka-style ``start()`` / ``stop()`` calls.

Structured concurrency wants a task group entered and exited in one task, but aiokafka's
API lets users call ``start()`` in one task and ``stop()`` in another (a web framework's
startup and shutdown hooks). So ``start()`` runs the task group inside ONE supervisor task
that this object owns and ``stop()`` awaits: every background task still lives in that
task group and is cancelled and awaited on stop. That supervisor is the only task the
package creates outside a task group. ``async with`` does the same on asyncio (a block may
be left in another task, e.g. pytest-asyncio fixtures); on other anyio backends it enters
the task group in the caller's own task.

Failure containment (one rule for every client): when a background task fails, the host
records the cause, runs the client's failure callbacks (which resolve what is pending,
e.g. delivery handles) and cancels every public call waiting inside :meth:`guard`, which
then raises :class:`ClientFailedError` naming the cause; every later call raises it too
(:meth:`require_running`), ``stop()`` returns normally, and the supervisor task ends
without an exception, so none is left unretrieved.

``WakeLoop`` is the planning loop the consumer's and the share consumer's fetchers run in
their task group: each pass decides synchronously what to start, then waits for a wake-up
or for the time the pass asked to run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from types import TracebackType
from typing import ParamSpec, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel

from aiokafka_lead.errors import ClientClosedError, ClientFailedError
from aiokafka_lead.wakeup import Wakeup

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

Setup = Callable[[anyio.abc.TaskGroup], Awaitable[None]]
OnFailure = Callable[["ClientFailedError"], Awaitable[None]]


def weakly(method: Callable[P, R], default: R) -> Callable[P, R]:
    """A bound ``method`` that does not keep its object alive (``default`` once the object is
    gone): the callbacks a client hands its background parts, so that the task tree never
    holds the client itself and one dropped without ``stop()`` is collected (and warns)."""
    ref = weakref.WeakMethod(method)

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        target = ref()
        return default if target is None else target(*args, **kwargs)

    return call


def unwrap_group(exc: BaseException) -> BaseException:
    """The single real error inside nested one-member exception groups (what users expect)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


class TaskGroupHost:
    """Owns one client's task group; ``setup`` starts the client's background tasks."""

    def __init__(self, name: str, on_failure: OnFailure | None = None) -> None:
        self._name = name
        self._on_failure = on_failure
        self._stop: anyio.Event | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._entered: anyio.abc.TaskGroup | None = None
        self._failure: BaseException | None = None
        self._guards: set[anyio.CancelScope] = set()
        self.task_group: anyio.abc.TaskGroup | None = None

    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop the supervisor task runs on (None when not started with it)."""
        task = self._supervisor
        return None if task is None or task.done() else task.get_loop()

    @property
    def running(self) -> bool:
        return self.task_group is not None

    def require_running(self) -> anyio.abc.TaskGroup:
        if self.task_group is None:
            if self._failure is not None:
                # not "not started": a background task died and took the client with it
                raise self.failed_error()
            raise ClientClosedError(f"{self._name} is not started (call start() or use async with)")
        return self.task_group

    def failure(self) -> BaseException | None:
        """The exception a background task failed with (None while healthy), kept across stop()."""
        return self._failure

    def failed_error(self) -> ClientFailedError:
        """A fresh error for one caller (one instance raised in many tasks would pile up tracebacks)."""
        cause = self._failure
        assert cause is not None
        error = ClientFailedError(f"{self._name} failed: a background task raised {cause!r}", cause)
        error.__cause__ = cause
        return error

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """Wrap a public call's waiting: a background failure ends it at once with ClientFailedError."""
        if self._failure is not None:
            raise self.failed_error()
        scope = anyio.CancelScope()
        self._guards.add(scope)
        try:
            with scope:
                yield
        except Exception as exc:
            if self._failure is not None and scope.cancel_called:
                raise self.failed_error() from exc  # e.g. its connection closed by the failure
            raise
        finally:
            self._guards.discard(scope)
        if scope.cancelled_caught and self._failure is not None:
            raise self.failed_error()

    async def _failed(self, exc: BaseException) -> None:
        """A background task failed: record why, resolve what waits, never re-raise."""
        cause = unwrap_group(exc)
        self._failure = cause
        log.error("%s: a background task failed; the client is unusable: %r", self._name, cause, exc_info=exc)
        for scope in list(self._guards):
            scope.cancel()
        if self._on_failure is not None:
            with anyio.CancelScope(shield=True):
                await self._on_failure(self.failed_error())

    async def start(self, setup: Setup) -> None:
        """Start in a supervisor task (asyncio only); returns once ``setup`` has finished."""
        if self.running:
            raise RuntimeError(f"{self._name} is already started")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(f"{self._name}.start() needs asyncio; on trio use `async with`") from None
        started: asyncio.Future[None] = loop.create_future()
        # retrieved even when nobody awaits it any more (start() cancelled): no stray warning
        started.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._failure = None
        self._stop = anyio.Event()
        self._supervisor = loop.create_task(self._supervise(setup, started), name=self._name)
        try:
            await asyncio.shield(started)
        except BaseException:
            await self.stop()
            raise

    async def _supervise(self, setup: Setup, started: asyncio.Future[None]) -> None:
        assert self._stop is not None
        try:
            async with anyio.create_task_group() as tg:
                self.task_group = tg
                await setup(tg)
                started.set_result(None)
                await self._stop.wait()
                tg.cancel_scope.cancel()
        except BaseException as exc:
            self.task_group = None
            if not started.done():
                started.set_exception(unwrap_group(exc))
                return
            if not isinstance(exc, Exception):
                raise  # cancelled from outside (the loop is shutting down)
            await self._failed(exc)
        finally:
            self.task_group = None

    async def enter(self, setup: Setup) -> None:
        """``async with`` path.

        On asyncio this is :meth:`start`: users (and pytest-asyncio fixtures) often leave
        the block in another task than the one that entered it. On other anyio backends
        the task group is entered in the caller's task.
        """
        if self.running:
            raise RuntimeError(f"{self._name} is already started")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            await self.start(setup)
            return
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._entered = tg
        self.task_group = tg
        try:
            await setup(tg)
        except BaseException as exc:
            tg.cancel_scope.cancel()
            self.task_group = None
            self._entered = None
            try:
                await tg.__aexit__(type(exc), exc, exc.__traceback__)
            except BaseException as group:
                raise unwrap_group(group) from None
            raise

    async def stop(self) -> None:
        """Cancel every background task and wait for them (idempotent)."""
        if self._entered is not None:
            tg, self._entered = self._entered, None
            tg.cancel_scope.cancel()
            self.task_group = None
            await tg.__aexit__(None, None, None)
            return
        if self._stop is not None:
            self._stop.set()
        task, self._supervisor = self._supervisor, None
        if task is not None:
            with anyio.CancelScope(shield=True):
                await asyncio.wait([task])
            if not task.cancelled():
                task.exception()  # the supervisor reports failures itself; never re-raised here


class ExitOnLeave:
    """``async with``'s end for the clients and the fake cluster: leaving the block runs
    :meth:`_exit` (a client's aiokafka ``stop()`` or ``close()``)."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._exit(exc)

    async def _exit(self, exc: BaseException | None) -> None:
        """Leave the ``async with`` block; ``exc``: what it raised (None if nothing)."""
        raise NotImplementedError


#: a pass of a WakeLoop: starts what is due in the task group; returns when (time.monotonic())
#: it needs the next pass by itself, math.inf or None: only when woken
Plan = Callable[[anyio.abc.TaskGroup], float | None]


class WakeLoop:
    """Passes of ``plan`` in a task group of their own, one per wake-up (or when a pass asked
    for the next); whatever a pass starts runs in that task group."""

    def __init__(self, plan: Plan) -> None:
        self._plan = plan
        self._wake = Wakeup(keep_timer=True)

    def wake(self) -> None:
        self._wake.set()

    @property
    def woken(self) -> bool:
        """A pass is due (woken since the last one began)."""
        return self._wake.is_set()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            task_status.started()
            while True:
                self._wake.clear()
                next_at = self._plan(tg)
                timeout = (
                    None if next_at is None or next_at == math.inf else max(next_at - time.monotonic(), 0.0)
                )
                if self._wake.is_set():
                    await anyio.lowlevel.checkpoint()  # woken meanwhile: others run first
                else:
                    await self._wake.wait(timeout)


__all__ = [
    "ClientClosedError",
    "ClientFailedError",
    "ExitOnLeave",
    "Plan",
    "TaskGroupHost",
    "WakeLoop",
    "unwrap_group",
]
