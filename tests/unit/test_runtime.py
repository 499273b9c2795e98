"""TaskGroupHost: start/stop from different tasks, async-with path, failures surface."""

from __future__ import annotations

import asyncio

import anyio
import anyio.abc
import pytest

from aiokafka_lead.runtime import ClientClosedError, TaskGroupHost


class Recorder:
    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0

    async def worker(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        self.started += 1
        task_status.started()
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled += 1

    async def setup(self, tg: anyio.abc.TaskGroup) -> None:
        await tg.start(self.worker)
        await tg.start(self.worker)


async def test_start_and_stop_from_different_tasks() -> None:
    host, rec = TaskGroupHost("client"), Recorder()
    await asyncio.get_running_loop().create_task(host.start(rec.setup))
    assert host.running and rec.started == 2
    await asyncio.get_running_loop().create_task(host.stop())
    assert not host.running and rec.cancelled == 2
    with pytest.raises(ClientClosedError):
        host.require_running()


async def test_async_with_path_may_exit_in_another_task() -> None:
    host, rec = TaskGroupHost("client"), Recorder()
    await host.enter(rec.setup)
    assert host.running and rec.started == 2
    await asyncio.get_running_loop().create_task(host.stop())
    assert rec.cancelled == 2
    await host.stop()  # idempotent


def test_async_with_on_trio_enters_in_caller_task() -> None:
    host, rec = TaskGroupHost("client"), Recorder()

    async def main() -> None:
        await host.enter(rec.setup)
        assert host.running and rec.started == 2
        with pytest.raises(RuntimeError, match="needs asyncio"):
            await TaskGroupHost("other").start(rec.setup)
        await host.stop()

    anyio.run(main, backend="trio")
    assert rec.cancelled == 2


async def test_setup_failure_propagates_and_cleans_up() -> None:
    host, rec = TaskGroupHost("client"), Recorder()

    async def bad_setup(tg: anyio.abc.TaskGroup) -> None:
        await tg.start(rec.worker)
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await host.start(bad_setup)
    assert not host.running and rec.cancelled == 1


async def test_double_start_refused() -> None:
    host, rec = TaskGroupHost("client"), Recorder()
    await host.start(rec.setup)
    with pytest.raises(RuntimeError, match="already started"):
        await host.start(rec.setup)
    await host.stop()
