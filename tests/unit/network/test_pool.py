"""BrokerPool on the fake cluster: per-node locks, reconnect backoff, idle reaping, bootstrap order."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.errors import KafkaConnectionError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Delay

API_VERSIONS = 18


@asynccontextmanager
async def core_on(fc: FakeCluster, **config: Any) -> AsyncIterator[ClientCore]:
    # no KIP-714 loop unless asked: it may connect to any broker at start, and these tests
    # count and break connections to one node
    config.setdefault("enable_metrics_push", False)
    core = ClientCore(
        "test",
        ConnectionConfig(
            bootstrap_servers=fc.bootstrap, client_id="test", request_timeout_ms=5000, **config
        ),
    )
    await core.start()
    try:
        yield core
    finally:
        await core.close()


async def test_a_slow_broker_does_not_block_connecting_to_others() -> None:
    with anyio.fail_after(10):
        async with FakeCluster(brokers=3) as fc, core_on(fc) as core:
            fc.intercept(API_VERSIONS, lambda node, *_: Delay(3.0) if node == 2 else None, times=None)
            async with anyio.create_task_group() as tg:
                tg.start_soon(core.pool.connection, 2)  # stuck in its handshake for 3 s
                await anyio.wait_all_tasks_blocked()
                started = time.monotonic()
                conn3 = await core.pool.connection(3)
                assert time.monotonic() - started < 2.0  # node 2's handshake takes 3 s
                assert conn3.node_id == 3 and core.pool.live_connection(2) is None
                tg.cancel_scope.cancel()


async def test_concurrent_callers_share_one_connect() -> None:
    with anyio.fail_after(10):
        async with FakeCluster(brokers=3) as fc, core_on(fc) as core:
            before = core.pool.connects
            results = []

            async def get() -> None:
                results.append(await core.pool.connection(2))

            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(get)
            assert core.pool.connects - before == 1
            assert len({id(c) for c in results}) == 1


async def test_reconnect_backoff_spaces_attempts_to_a_dead_node() -> None:
    with anyio.fail_after(15):
        async with (
            FakeCluster(brokers=3) as fc,
            core_on(fc, reconnect_backoff_ms=200, reconnect_backoff_max_ms=1000) as core,
        ):
            await fc.stop_node(2)
            attempts = []
            for _ in range(3):
                started = time.monotonic()
                with pytest.raises(KafkaConnectionError):
                    await core.pool.connection(2)
                attempts.append(time.monotonic() - started)
            assert attempts[0] < 0.5  # the first failure is immediate
            assert attempts[1] >= 0.8 * 0.2  # then 200 ms (+-20%)
            assert attempts[2] >= 0.8 * 0.4  # then 400 ms: exponential
            assert core.store.refresh_requests["connect failed"] >= 1


async def test_idle_connections_are_reaped_and_redialled() -> None:
    with anyio.fail_after(10):
        async with FakeCluster(brokers=3) as fc, core_on(fc, connections_max_idle_ms=200) as core:
            conn = await core.pool.connection(2)
            while not conn.closed:  # the reaper runs every idle/4
                await conn._closed.wait()
            again = await core.pool.connection(2)
            assert again is not conn and not again.closed


async def test_bootstrap_servers_come_last_until_rebootstrap() -> None:
    with anyio.fail_after(10):
        async with FakeCluster(brokers=3) as fc, core_on(fc) as core:
            order = core.pool._candidates()
            assert all(n >= 0 for n in order[:3])  # brokers named by metadata first
            assert all(n < 0 for n in order[3:]) and len(order) > 3  # then the bootstrap addresses
            core.pool.forget_nodes()  # KIP-1102 REBOOTSTRAP_REQUIRED
            assert all(n < 0 for n in core.pool._candidates()[:3])
            await core.pool.any_connection()
            assert all(n >= 0 for n in core.pool._candidates()[:1])


async def test_a_broker_dying_mid_handshake_is_a_retriable_connection_error() -> None:
    from aiokafka_lead.testing.fake.intercept import Close

    with anyio.fail_after(10):
        async with FakeCluster(brokers=3) as fc, core_on(fc) as core:
            fc.intercept(API_VERSIONS, lambda node, *_: Close() if node == 2 else None, times=1)
            with pytest.raises(KafkaConnectionError) as info:  # not an exception group
                await core.pool.connection(2)
            assert info.value.retriable
            assert (await core.pool.connection(2)).node_id == 2  # the next attempt works
