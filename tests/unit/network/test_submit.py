"""Connection.submit: a request written at once, its outcome delivered by callback, exactly
once, with the errors send() raises; declined (nothing written) when it would have to wait."""

from __future__ import annotations

import time
from typing import Any

import anyio

from aiokafka_lead.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import MetadataRequest, MetadataResponse
from tests.support.script_server import script_server
from tests.unit.network.test_connection import connected, metadata, send_noting_the_close

VERSION = 12


class Outcomes:
    """What the callbacks received, in order."""

    def __init__(self) -> None:
        self.got: list[tuple[str, Any]] = []
        self._changed = anyio.Event()

    def callback(self, name: str) -> Any:
        def on_answer(response: MetadataResponse | None, error: KafkaError | None) -> None:
            self.got.append((name, error if error is not None else response.cluster_id))  # type: ignore[union-attr]
            self._changed.set()

        return on_answer

    async def wait_for(self, count: int) -> None:
        with anyio.fail_after(5):
            while len(self.got) < count:
                self._changed = anyio.Event()
                await self._changed.wait()


def submit(conn: Connection, outcomes: Outcomes, name: str, *, timeout_ms: float = 10_000) -> bool:
    request = MetadataRequest(topics=None)
    return conn.submit(request, version=VERSION, timeout_ms=timeout_ms, on_answer=outcomes.callback(name))


async def test_submitted_requests_are_answered_by_callback_each_exactly_once() -> None:
    release = anyio.Event()

    async def reversed_answers(header: RequestHeader, request: Any) -> Any:
        if header.correlation_id == 2:  # the first waits until the others were answered
            await release.wait()
        elif header.correlation_id == 4:
            release.set()
        return metadata(f"c{header.correlation_id}")

    outcomes = Outcomes()
    async with script_server(reversed_answers) as server, connected(server) as conn:
        assert all(submit(conn, outcomes, name) for name in "abc")
        await outcomes.wait_for(3)
        assert outcomes.got == [("b", "c3"), ("c", "c4"), ("a", "c2")]
        assert conn.in_flight == 0
        # the window is whole again: as many more go without waiting
        assert all(submit(conn, outcomes, name) for name in "defgh")
        await outcomes.wait_for(8)
        await anyio.wait_all_tasks_blocked()
    assert len(outcomes.got) == 8


async def test_submit_declines_when_the_window_is_full_and_writes_nothing() -> None:
    gate = anyio.Event()

    async def held(header: RequestHeader, request: Any) -> Any:
        await gate.wait()
        return metadata("ok")

    outcomes = Outcomes()
    async with script_server(held) as server, connected(server, max_in_flight=2) as conn:
        assert submit(conn, outcomes, "a") and submit(conn, outcomes, "b")
        assert not submit(conn, outcomes, "c")
        await server.wait_for_requests(2)
        await anyio.wait_all_tasks_blocked()
        assert len(server.received) == 2
        gate.set()
        await outcomes.wait_for(2)
        assert submit(conn, outcomes, "d")
        await outcomes.wait_for(3)
    assert [name for name, _ in outcomes.got] == ["a", "b", "d"]


async def test_a_submitted_request_without_an_answer_times_out_and_closes_the_connection() -> None:
    async def never(header: RequestHeader, request: Any) -> Any:
        return None

    outcomes = Outcomes()
    others: list[BaseException] = []
    with anyio.fail_after(5):
        async with script_server(never) as server, connected(server) as conn:
            async with anyio.create_task_group() as tg:
                tg.start_soon(send_noting_the_close, conn, others)
                await server.wait_for_requests(1)
                assert submit(conn, outcomes, "late", timeout_ms=200)
                await outcomes.wait_for(1)
            assert conn.closed
            assert not submit(conn, outcomes, "after")
    [(name, error)] = outcomes.got
    assert name == "late" and isinstance(error, KafkaTimeoutError)
    assert "no answer within 200 ms; its connection is closed" in str(error)
    assert len(others) == 1 and "closed while waiting" in str(others[0])


async def test_each_submitted_request_times_out_at_its_own_deadline() -> None:
    """The submitted requests share one timer: a later request with an earlier deadline
    moves it earlier; a timer that rings for an answered request is armed again for the
    next deadline, and that request does not time out before it."""

    async def first_only(header: RequestHeader, request: Any) -> Any:
        return metadata("first") if header.correlation_id == 2 else None

    outcomes = Outcomes()
    with anyio.fail_after(5):
        async with script_server(first_only) as server, connected(server) as conn:
            assert submit(conn, outcomes, "answered", timeout_ms=100)
            await outcomes.wait_for(1)
            began = time.monotonic()
            assert submit(conn, outcomes, "late", timeout_ms=400)  # the 100 ms timer rings first
            await outcomes.wait_for(2)
            waited = time.monotonic() - began
            assert conn.closed
    assert outcomes.got[0] == ("answered", "first")
    name, error = outcomes.got[1]
    assert name == "late" and "no answer within 400 ms" in str(error)
    assert waited >= 0.4 - 0.005  # the loop's clock resolution

    async def never(header: RequestHeader, request: Any) -> Any:
        return None

    outcomes = Outcomes()
    with anyio.fail_after(5):
        async with script_server(never) as server, connected(server) as conn:
            assert submit(conn, outcomes, "patient", timeout_ms=3_000)
            assert submit(conn, outcomes, "hasty", timeout_ms=100)  # earlier than the timer
            await outcomes.wait_for(2)
    (first, timed_out), (second, closed) = outcomes.got
    assert first == "hasty" and "no answer within 100 ms" in str(timed_out)
    assert second == "patient" and "closed while waiting" in str(closed)


async def test_closing_the_connection_fails_what_was_submitted() -> None:
    async def never(header: RequestHeader, request: Any) -> Any:
        return None

    outcomes = Outcomes()
    async with script_server(never) as server, connected(server) as conn:
        assert submit(conn, outcomes, "a")
        await server.wait_for_requests(1)
        await conn.close()
        await outcomes.wait_for(1)
    [(_, error)] = outcomes.got
    assert isinstance(error, KafkaConnectionError) and "closed while waiting" in str(error)


async def test_submit_declines_while_a_write_waits_for_the_socket() -> None:
    outcomes = Outcomes()
    async with script_server(_answer) as server, connected(server) as conn:
        async with conn._send_lock:  # what send() holds while the socket's buffer is full
            assert not submit(conn, outcomes, "a")
        assert submit(conn, outcomes, "b")
        await outcomes.wait_for(1)
    assert [name for name, _ in outcomes.got] == ["b"]


async def _answer(header: RequestHeader, request: Any) -> MetadataResponse:
    return metadata(f"c{header.correlation_id}")


def test_submit_declines_off_asyncio() -> None:
    async def scenario() -> bool:
        async with script_server(_answer) as server, connected(server) as conn:
            declined = not submit(conn, Outcomes(), "a")
            response = await conn.send(MetadataRequest(topics=None))  # the way that is left
            return declined and response.cluster_id.startswith("c")

    assert anyio.run(scenario, backend="trio")
