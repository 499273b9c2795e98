"""Wakeup: a sticky flag with a timed wait; with ``keep_timer`` one loop timer serves many waits."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio
import pytest

from aiokafka_lead.wakeup import Wakeup

pytestmark = pytest.mark.parametrize("keep_timer", [False, True])


async def set_after(wakeup: Wakeup, delay_s: float) -> None:
    await anyio.sleep(delay_s)
    wakeup.set()


async def set_during(wakeup: Wakeup, timeout_s: float) -> None:
    """A wait of ``timeout_s`` that a set ends after 10 ms (its timer may stay armed)."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(set_after, wakeup, 0.01)
        assert await wakeup.wait(timeout_s)
    wakeup.clear()


async def test_a_wait_returns_true_once_set_and_the_flag_stays_until_cleared(keep_timer: bool) -> None:
    wakeup = Wakeup(keep_timer=keep_timer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(set_after, wakeup, 0.01)
        assert await wakeup.wait(10)
    assert await wakeup.wait(0)  # sticky
    wakeup.clear()
    assert not await wakeup.wait(0.01)


async def test_a_wait_lasts_its_whole_timeout_when_an_earlier_wait_left_a_timer(keep_timer: bool) -> None:
    wakeup = Wakeup(keep_timer=keep_timer)
    await set_during(wakeup, 0.1)  # set long before its timer: with keep_timer it stays armed
    began = time.monotonic()
    assert not await wakeup.wait(0.3)  # the 0.1 s timer rings during this wait: it waits on
    assert time.monotonic() - began >= 0.3 - 0.005  # the loop's clock resolution


async def test_an_earlier_deadline_replaces_a_later_timer(keep_timer: bool) -> None:
    wakeup = Wakeup(keep_timer=keep_timer)
    await set_during(wakeup, 60)
    with anyio.fail_after(5):
        assert not await wakeup.wait(0.05)


async def test_a_wait_without_timeout_is_not_ended_by_an_old_timer(keep_timer: bool) -> None:
    wakeup = Wakeup(keep_timer=keep_timer)
    await set_during(wakeup, 0.05)
    async with anyio.create_task_group() as tg:
        tg.start_soon(set_after, wakeup, 0.2)  # the 0.05 s timer rang long before
        began = time.monotonic()
        assert await wakeup.wait()
        assert time.monotonic() - began >= 0.2 - 0.005


async def test_keep_timer_arms_one_timer_for_many_waits(
    keep_timer: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_at = loop.call_at  # call_later() calls it too

    def counting(when: float, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        armed.append(when)
        return call_at(when, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counting)
    wakeup = Wakeup(keep_timer=keep_timer)
    for _ in range(20):
        loop.call_soon(wakeup.set)
        assert await wakeup.wait(30)  # each deadline later than the one before
        wakeup.clear()
    assert len(armed) == (1 if keep_timer else 20)


async def test_set_at_sets_the_flag_at_its_time_through_the_kept_timer(keep_timer: bool) -> None:
    wakeup = Wakeup(keep_timer=keep_timer)
    began = time.monotonic()
    wakeup.set_at(began + 0.1)
    with anyio.fail_after(5):
        assert await wakeup.wait(30)
    took = time.monotonic() - began
    if keep_timer:
        assert took >= 0.1 - 0.005
    else:  # without a kept timer it sets at once
        assert took < 0.1


async def test_set_at_survives_a_ring_for_an_earlier_deadline(keep_timer: bool) -> None:
    wakeup = Wakeup(keep_timer=keep_timer)
    began = time.monotonic()
    wakeup.set_at(began + 0.15)
    # with a kept timer the wait's 20 ms rings first, not yet set; without, it set at once
    assert await wakeup.wait(0.02) is not keep_timer
    if not keep_timer:
        return
    with anyio.fail_after(5):
        assert await wakeup.wait(30)
    assert time.monotonic() - began >= 0.15 - 0.005


async def test_clear_cancels_a_pending_set_at(keep_timer: bool) -> None:
    wakeup = Wakeup(keep_timer=keep_timer)
    wakeup.set_at(time.monotonic() + 0.05)
    wakeup.clear()
    assert not await wakeup.wait(0.15)


async def test_set_at_a_past_time_sets_at_once(keep_timer: bool) -> None:
    wakeup = Wakeup(keep_timer=keep_timer)
    wakeup.set_at(time.monotonic() - 1)
    assert wakeup.is_set()
