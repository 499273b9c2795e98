"""Cancellation leaves the connection consistent: closed, every waiter woken, nothing hangs."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead.errors import KafkaConnectionError
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import MetadataRequest
from tests.support.script_server import script_server
from tests.unit.network.test_connection import connected


async def never(header: RequestHeader, request: Any) -> Any:
    return None


async def test_cancelled_in_flight_request_closes_connection_and_wakes_others() -> None:
    woke: list[BaseException] = []
    with anyio.fail_after(5):
        async with script_server(never) as server, connected(server) as conn:

            async def waiter() -> None:
                try:
                    await conn.send(MetadataRequest(topics=None))
                except KafkaConnectionError as exc:
                    woke.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(waiter)
                await server.wait_for_requests(1)
                with anyio.move_on_after(0.05) as scope:
                    await conn.send(MetadataRequest(topics=None))
                assert scope.cancelled_caught
            assert conn.closed
            assert conn.in_flight == 0
    assert len(woke) == 1 and "cancelled in flight" in str(woke[0])


async def test_cancel_before_sending_keeps_connection() -> None:
    gate = anyio.Event()

    async def held(header: RequestHeader, request: Any) -> Any:
        await gate.wait()
        from tests.unit.network.test_connection import metadata

        return metadata("ok")

    with anyio.fail_after(5):
        async with script_server(held) as server, connected(server, max_in_flight=1) as conn:
            async with anyio.create_task_group() as tg:
                tg.start_soon(conn.send, MetadataRequest(topics=None))
                await server.wait_for_requests(1)
                # this one waits for a window slot, so nothing of it was written yet
                with anyio.move_on_after(0.05) as scope:
                    await conn.send(MetadataRequest(topics=None))
                assert scope.cancelled_caught
                assert not conn.closed
                gate.set()
            assert len(server.received) == 1
            assert (await conn.send(MetadataRequest(topics=None))).cluster_id == "ok"


async def test_close_wakes_every_waiter() -> None:
    with anyio.fail_after(5):
        async with script_server(never) as server, connected(server) as conn:
            failures: list[BaseException] = []

            async def call() -> None:
                with pytest.raises(KafkaConnectionError) as info:
                    await conn.send(MetadataRequest(topics=None))
                failures.append(info.value)

            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(call)
                await server.wait_for_requests(3)
                await conn.close()
            assert len(failures) == 3
