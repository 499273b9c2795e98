"""The frame stream under a connection: asyncio's buffered protocol and the anyio fallback."""

from __future__ import annotations

import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import pytest

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.network import stream as stream_module
from aiokafka_lead.network.stream import FrameStream, open_frame_stream
from tests.support.waiting import eventually

Peer = Callable[[anyio.abc.SocketStream], Awaitable[None]]


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


@asynccontextmanager
async def peer(handler: Peer) -> AsyncIterator[int]:
    """A TCP peer on a free local port running ``handler`` for each connection."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def serve(conn: anyio.abc.SocketStream) -> None:
        async with conn:
            await handler(conn)

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        try:
            yield port
        finally:
            tg.cancel_scope.cancel()


async def receive_all(stream: FrameStream, count: int) -> list[bytes]:
    got: list[bytes] = []
    while len(got) < count:
        got += [bytes(f) for f in await stream.receive_frames()]
    return got


async def test_frames_of_every_size_arrive_whole_and_in_order() -> None:
    bodies = [b"", b"x", bytes(range(256)) * 4, b"y" * 200_000, b"z" * 70_000, b"w" * 10]

    async def send_them(conn: anyio.abc.SocketStream) -> None:
        await conn.send(b"".join(frame(b) for b in bodies))
        await anyio.sleep_forever()

    with anyio.fail_after(10):
        async with peer(send_them) as port:
            stream = await open_frame_stream("127.0.0.1", port, None, 1 << 20)
            try:
                assert await receive_all(stream, len(bodies)) == bodies
                assert stream.received == sum(4 + len(b) for b in bodies)
                assert stream.first_bytes == frame(b"")[:4] + frame(b"x")[:4]
            finally:
                await stream.aclose()


async def test_reading_pauses_while_frames_wait_and_resumes_when_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Backpressure: frames nobody takes do not pile up in memory without bound."""
    monkeypatch.setattr(stream_module, "PAUSE_READING_AT", 10_000)
    bodies = [bytes([i]) * 5_000 for i in range(40)]

    async def send_them(conn: anyio.abc.SocketStream) -> None:
        for body in bodies:
            await conn.send(frame(body))
        await anyio.sleep_forever()

    with anyio.fail_after(10):
        async with peer(send_them) as port:
            stream = await open_frame_stream("127.0.0.1", port, None, 1 << 20)
            protocol = stream._protocol  # type: ignore[attr-defined]
            try:
                await eventually(lambda: protocol.reading_paused)
                # paused within one receive (the scratch buffer, 64 KiB) of the limit
                assert protocol.queued <= 10_000 + 65_536
                assert await receive_all(stream, len(bodies)) == bodies
                assert not protocol.reading_paused
            finally:
                await stream.aclose()


async def test_the_peers_close_comes_after_the_frames_before_it() -> None:
    async def send_and_close(conn: anyio.abc.SocketStream) -> None:
        await conn.send(frame(b"last") + frame(b"cut")[:5])

    with anyio.fail_after(10):
        async with peer(send_and_close) as port:
            stream = await open_frame_stream("127.0.0.1", port, None, 1 << 20)
            try:
                assert await receive_all(stream, 1) == [b"last"]
                with pytest.raises(anyio.EndOfStream):
                    await stream.receive_frames()
                assert stream.buffered == 5  # the hint's "bytes of it received"
                with pytest.raises(anyio.BrokenResourceError):
                    await stream.send(frame(b"late"))
            finally:
                await stream.aclose()


async def test_a_hostile_size_is_refused_after_the_frames_before_it() -> None:
    async def send_garbage(conn: anyio.abc.SocketStream) -> None:
        await conn.send(frame(b"ok") + b"HTTP/1.1 400")
        await anyio.sleep_forever()

    with anyio.fail_after(10):
        async with peer(send_garbage) as port:
            stream = await open_frame_stream("127.0.0.1", port, None, 1 << 20)
            try:
                assert await receive_all(stream, 1) == [b"ok"]
                with pytest.raises(DecodeError, match="outside"):
                    await stream.receive_frames()
            finally:
                await stream.aclose()


async def test_our_close_ends_a_waiting_receive_and_later_sends() -> None:
    async def silent(conn: anyio.abc.SocketStream) -> None:
        await anyio.sleep_forever()

    with anyio.fail_after(10):
        async with peer(silent) as port:
            stream = await open_frame_stream("127.0.0.1", port, None, 1 << 20)
            failure: list[BaseException] = []

            async def receive() -> None:
                try:
                    await stream.receive_frames()
                except anyio.ClosedResourceError as exc:
                    failure.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(receive)
                await anyio.wait_all_tasks_blocked()
                await stream.aclose()
            assert len(failure) == 1
            with pytest.raises(anyio.ClosedResourceError):
                await stream.send(frame(b"x"))


async def test_sends_wait_while_the_peer_does_not_read() -> None:
    """A peer that stops reading holds send() (the transport's buffer is bounded), and a
    close does not wait for it forever."""
    stalled = anyio.Event()

    async def never_read(conn: anyio.abc.SocketStream) -> None:
        conn.extra(anyio.abc.SocketAttribute.raw_socket).setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        await stalled.wait()

    with anyio.fail_after(20):
        async with peer(never_read) as port:
            stream = await open_frame_stream("127.0.0.1", port, None, 1 << 20)
            sent = 0
            with anyio.move_on_after(1) as scope:
                while True:
                    await stream.send(frame(b"x" * 65536))
                    sent += 1
            assert scope.cancelled_caught and sent < 1000  # held, not buffered without bound
            with anyio.move_on_after(1):
                await stream.aclose()
            lost = stream._protocol.lost  # type: ignore[attr-defined]
            await eventually(lost.done)  # aborted: gone at the loop's next turn
            stalled.set()


async def test_a_frame_over_the_high_water_mark_is_written_at_once_into_an_empty_buffer() -> None:
    """write_nowait takes a large frame when nothing is buffered (as send() would write it),
    then declines every frame while the peer has not read enough of it, and the peer gets
    each frame written whole and in order."""
    body = b"x" * (4 << 20)  # over the transport's high-water mark (64 KiB) and the socket's buffers
    reading = anyio.Event()
    got: list[bytes] = []

    async def read_later(conn: anyio.abc.SocketStream) -> None:
        await reading.wait()
        data = b""
        while len(data) < 2 * (4 + len(body)):
            data += await conn.receive()
        got.extend([data[4 : 4 + len(body)], data[8 + len(body) :]])
        await anyio.sleep_forever()

    with anyio.fail_after(20):
        async with peer(read_later) as port:
            stream = await open_frame_stream("127.0.0.1", port, None, 1 << 20)
            transport = stream._protocol.transport  # type: ignore[attr-defined]
            sock = transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            assert transport.get_write_buffer_size() == 0
            whole = frame(body)
            assert stream.write_nowait([whole[:3], memoryview(whole)[3:100], whole[100:]])  # in pieces
            assert transport.get_write_buffer_size() > 0  # the peer does not read yet
            assert not stream.write_nowait(frame(b"y"))  # it would wait behind the first
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            reading.set()
            await stream.send([frame(body)])  # waits for the drain, then goes
            await eventually(lambda: len(got) == 2)
            assert got == [body, body]
            await stream.aclose()


def test_the_anyio_stream_serves_backends_other_than_asyncio() -> None:
    bodies = [b"a", b"b" * 100_000]

    async def send_them(conn: anyio.abc.SocketStream) -> None:
        await conn.send(b"".join(frame(b) for b in bodies))
        await anyio.sleep_forever()

    async def scenario() -> list[bytes]:
        with anyio.fail_after(10):
            async with peer(send_them) as port:
                stream = await open_frame_stream("127.0.0.1", port, None, 1 << 20)
                assert type(stream).__name__ == "_AnyioFrameStream"
                try:
                    return await receive_all(stream, 2)
                finally:
                    await stream.aclose()

    assert anyio.run(scenario, backend="trio") == bodies


@asynccontextmanager
async def handled_directly(
    bodies: list[bytes], handler: Callable[[stream_module.Frame], bool]
) -> AsyncIterator[FrameStream]:
    """A stream whose frames go to ``handler``; the peer sends ``bodies`` once the stream's
    first byte reached it, so none is read before the caller waits for frames."""

    async def send_them(conn: anyio.abc.SocketStream) -> None:
        await conn.receive(1)
        await conn.send(b"".join(frame(b) for b in bodies))
        await anyio.sleep_forever()

    with anyio.fail_after(10):
        async with peer(send_them) as port:
            stream = await open_frame_stream("127.0.0.1", port, None, 1 << 20)
            stream.handle_frames_directly(handler)
            try:
                await stream.send(b"!")
                yield stream
            finally:
                await stream.aclose()


async def test_frames_go_to_the_direct_handler_until_it_declines_one_then_in_order_to_the_receiver() -> None:
    handled: list[bytes] = []

    def handler(f: stream_module.Frame) -> bool:
        if bytes(f) == b"stop" or handled[-1:] == [b"stop"]:
            return False
        handled.append(bytes(f))
        return True

    async with handled_directly([b"a", b"b", b"stop", b"c", b"d"], handler) as stream:
        assert await receive_all(stream, 3) == [b"stop", b"c", b"d"]
    assert handled == [b"a", b"b"]


async def test_a_failing_direct_handler_ends_reading_with_its_error() -> None:
    def handler(f: stream_module.Frame) -> bool:
        raise DecodeError(f"cannot read {bytes(f)!r}")

    async with handled_directly([b"bad", b"later"], handler) as stream:
        with pytest.raises(DecodeError, match="cannot read b'bad'"):
            await stream.receive_frames()
