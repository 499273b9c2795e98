"""The byte stream under a broker connection: request frames out, response frames in.

On asyncio the socket is read by a :class:`asyncio.BufferedProtocol`: the event loop
receives straight into the buffers of a :class:`BufferedFrameReader` (one scratch buffer
for the connection's life, a buffer of its own for each big frame), and the protocol keeps
reading while the connection takes the frames, pausing only when more than
``PAUSE_READING_AT`` bytes of frames wait. So a read allocates nothing it does not keep
(asyncio's plain protocols allocate up to 256 KiB per read and shrink it, which leaves the
allocator's heap fragmented over hours), and the loop does not add and remove the socket's
reader around every receive. On other anyio backends (trio) an anyio stream is fed to a
:class:`FrameReader`.

Errors: ``receive_frames()`` hands over every frame received before it raises
:class:`anyio.EndOfStream` (the peer closed), :class:`anyio.ClosedResourceError` (we
closed), :class:`DecodeError` (a size prefix out of bounds) or the socket's
:class:`OSError`; ``send()`` raises :class:`anyio.BrokenResourceError` on a connection
that is gone. A failed TLS handshake is :class:`TLSHandshakeFailed`.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Protocol, cast

import anyio
import anyio.abc
from anyio.streams.tls import TLSStream

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.protocol.framing import BufferedFrameReader, FrameReader, OutFrame, frame_size
from aiokafka_lead.wakeup import asyncio_loop

#: frames received and not yet taken by the connection, in bytes, that pause reading
PAUSE_READING_AT = 8 * 1024 * 1024
#: how many of the first bytes received are kept (to name a listener that is not Kafka's)
FIRST_BYTES = 8

Frame = memoryview | bytes


class TLSHandshakeFailed(Exception):
    """The TCP connection was up but the TLS handshake failed."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(repr(cause))
        self.cause = cause


class FrameStream(Protocol):
    """What a :class:`~aiokafka_lead.network.connection.Connection` reads and writes."""

    @property
    def received(self) -> int:
        """Bytes received so far."""
        ...

    @property
    def first_bytes(self) -> bytes:
        """The first bytes the peer sent (up to ``FIRST_BYTES``)."""
        ...

    @property
    def buffered(self) -> int:
        """Bytes received of a frame not yet complete."""
        ...

    def write_nowait(self, data: OutFrame) -> bool:
        """Write ``data`` if that needs no wait for the peer to read: nothing is buffered, or
        ``data`` fits under the buffer's high-water mark with what is; False, and nothing
        written, otherwise (writing paused) or when that cannot be known."""
        ...

    async def send(self, data: OutFrame) -> None:
        """Write ``data`` (bytes, or pieces written in turn), waiting while the peer reads."""
        ...

    def abort(self) -> None:
        """Drop the connection now: a waiting :meth:`receive_frames` raises, as after
        :meth:`aclose` (which is still due). For a request written by :meth:`write_nowait`
        that was not answered in time."""
        ...

    async def receive_frames(self) -> list[Frame]: ...

    def handle_frames_directly(self, handler: Callable[[Frame], bool]) -> None:
        """While :meth:`receive_frames` waits with nothing received, offer each arriving
        frame to ``handler`` where it is read, instead of waking the receiver: True, the
        frame was handled; False, it is not taken, and it and the frames after it go to
        :meth:`receive_frames` as usual. An exception from ``handler`` ends reading, and
        :meth:`receive_frames` raises it as it is (as the receiver's own handling of the
        frame would have). A no-op where frames cannot be had that way."""
        ...

    async def aclose(self) -> None: ...


async def open_frame_stream(
    host: str, port: int, ssl_context: ssl.SSLContext | None, max_frame_size: int
) -> FrameStream:
    """Connect (and the TLS handshake when ``ssl_context`` is given)."""
    loop = asyncio_loop()
    if loop is None:
        return await _AnyioFrameStream.open(host, port, ssl_context, max_frame_size)
    protocol = _FrameProtocol(loop, BufferedFrameReader(max_frame_size))
    transport, _ = await loop.create_connection(lambda: protocol, host, port)
    if ssl_context is not None:
        try:
            tls = await loop.start_tls(transport, protocol, ssl_context, server_hostname=host)
        except (OSError, EOFError) as exc:
            transport.abort()  # the TCP connection must not outlive the failed handshake
            raise TLSHandshakeFailed(exc) from exc
        except BaseException:
            transport.abort()
            raise
        if tls is None:  # the transport closed during the handshake
            raise TLSHandshakeFailed(ConnectionResetError("closed during the TLS handshake"))
        protocol.transport = tls
    return _AsyncioFrameStream(protocol)


def _write(transport: asyncio.WriteTransport, data: OutFrame) -> None:
    """A frame or its pieces, in order: the transport sends what the socket takes now and
    keeps the rest in its buffer (a copy, or on newer Pythons a view: the pieces are
    immutable, a sealed batch's records among them)."""
    if isinstance(data, bytes):
        transport.write(data)
    else:
        for piece in data:
            transport.write(piece)


def _wake(future: asyncio.Future[None] | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)


def _first_bytes(first: bytes, data: bytes | memoryview) -> bytes:
    return first + bytes(data[: FIRST_BYTES - len(first)])


class _FrameProtocol(asyncio.BufferedProtocol):
    """The event loop's side: receives into the frame reader and queues whole frames."""

    #: the socket's transport (a TLS transport over it after ``start_tls``)
    transport: asyncio.Transport

    def __init__(self, loop: asyncio.AbstractEventLoop, reader: BufferedFrameReader) -> None:
        self.loop = loop
        self.reader = reader
        self.frames: list[Frame] = []
        self.queued = 0  # bytes of the frames in ``frames``
        self.received = 0
        self.first_bytes = b""
        self.error: BaseException | None = None  # why reading stopped (besides an end of stream)
        self.eof = False
        self.lost = loop.create_future()  # done once the transport is gone
        self.reading_paused = False
        self.receiver: asyncio.Future[None] | None = None  # the receive_frames() waiting
        self.drain: asyncio.Future[None] | None = None  # set while the transport's buffer is full
        self.handler: Callable[[Frame], bool] | None = None  # handle_frames_directly()
        self.handler_error: BaseException | None = None  # what the handler raised: reading ended
        self._buffer: memoryview | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream socket's

    def get_buffer(self, sizehint: int) -> memoryview:
        self._buffer = buffer = self.reader.get_buffer()
        return buffer

    def buffer_updated(self, nbytes: int) -> None:
        if len(self.first_bytes) < FIRST_BYTES and self._buffer is not None:
            self.first_bytes = _first_bytes(self.first_bytes, self._buffer[:nbytes])
        self.received += nbytes
        reader = self.reader
        frames = reader.buffer_updated(nbytes)
        if reader.error is not None:
            self.error = reader.error
            self._pause_reading()
            _wake(self.receiver)
        if frames:
            receiver = self.receiver
            if self.handler is not None and receiver is not None and not receiver.done() and not self.frames:
                frames = self._handle(frames)  # the receiver waits with nothing: no frame overtaken
                if not frames:
                    return
            self.frames += frames
            for frame in frames:
                self.queued += len(frame)
            if self.queued > PAUSE_READING_AT:
                self._pause_reading()
            _wake(self.receiver)

    def _handle(self, frames: list[Frame]) -> list[Frame]:
        """Offers ``frames`` to the handler in order; the ones left for the receiver."""
        handler = self.handler
        assert handler is not None
        for i, frame in enumerate(frames):
            try:
                taken = handler(frame)
            except Exception as exc:  # the receiver raises it as is, as if it had handled the frame
                self.handler_error = exc
                self._pause_reading()
                _wake(self.receiver)
                return []
            if not taken:
                return frames[i:]
        return []

    def _pause_reading(self) -> None:
        if not self.reading_paused:
            self.transport.pause_reading()
            self.reading_paused = True

    def take_frames(self) -> list[Frame]:
        """The frames received so far; reading resumes if they had paused it."""
        frames, self.frames = self.frames, []
        self.queued = 0
        if self.reading_paused and self.error is None:
            self.reading_paused = False
            if not self.transport.is_closing():
                self.transport.resume_reading()
        return frames

    def eof_received(self) -> bool:
        self.eof = True
        _wake(self.receiver)
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and self.error is None:
            self.error = exc
        self.eof = True
        _wake(self.receiver)
        _wake(self.drain)
        _wake(self.lost)

    def pause_writing(self) -> None:
        if self.drain is None or self.drain.done():
            self.drain = self.loop.create_future()

    def resume_writing(self) -> None:
        _wake(self.drain)


class _AsyncioFrameStream:
    def __init__(self, protocol: _FrameProtocol) -> None:
        self._protocol = protocol
        self._closing = False

    @property
    def received(self) -> int:
        return self._protocol.received

    @property
    def first_bytes(self) -> bytes:
        return self._protocol.first_bytes

    @property
    def buffered(self) -> int:
        return self._protocol.reader.buffered

    def write_nowait(self, data: OutFrame) -> bool:
        protocol = self._protocol
        drain = protocol.drain
        if self._closing or protocol.lost.done() or (drain is not None and not drain.done()):
            return False
        transport = protocol.transport
        if transport.is_closing():
            return False
        buffered = transport.get_write_buffer_size()
        if buffered and buffered + frame_size(data) > transport.get_write_buffer_limits()[1]:
            return False  # it would wait behind what is buffered: send() waits for the drain
        # Into an empty buffer even a frame over the high-water mark goes now, as send()
        # writes it: what the socket does not take waits in the buffer, which pauses writing,
        # and every later write (this one's or send()'s) waits for the drain.
        _write(transport, data)
        return True

    async def send(self, data: OutFrame) -> None:
        protocol = self._protocol
        if self._closing:
            raise anyio.ClosedResourceError
        transport = protocol.transport
        if protocol.lost.done() or transport.is_closing():
            raise anyio.BrokenResourceError from protocol.error
        _write(transport, data)
        drain = protocol.drain
        if drain is not None and not drain.done():
            await drain
            if protocol.lost.done():
                raise anyio.BrokenResourceError from protocol.error

    def abort(self) -> None:
        protocol = self._protocol
        self._closing = True
        _wake(protocol.receiver)
        protocol.transport.abort()

    def handle_frames_directly(self, handler: Callable[[Frame], bool]) -> None:
        self._protocol.handler = handler

    async def receive_frames(self) -> list[Frame]:
        protocol = self._protocol
        while protocol.handler_error is not None or not protocol.frames:
            if protocol.handler_error is not None:
                raise protocol.handler_error  # the frames after it are not handed over
            if self._closing:
                raise anyio.ClosedResourceError
            if protocol.error is not None:
                error = protocol.error
                if isinstance(error, (OSError, DecodeError)):
                    raise error
                raise anyio.BrokenResourceError(repr(error))
            if protocol.eof:
                raise anyio.EndOfStream
            receiver = protocol.receiver = protocol.loop.create_future()
            try:
                await receiver
            finally:
                protocol.receiver = None
        return protocol.take_frames()

    async def aclose(self) -> None:
        protocol = self._protocol
        self._closing = True
        _wake(protocol.receiver)
        transport = protocol.transport
        if not transport.is_closing():
            transport.close()
        try:
            if not protocol.lost.done():
                await asyncio.shield(protocol.lost)
        finally:
            if not protocol.lost.done():  # not flushed in time (the caller's deadline): drop it
                transport.abort()


class _AnyioFrameStream:
    """An anyio byte stream fed to a :class:`FrameReader` (backends other than asyncio)."""

    def __init__(self, stream: anyio.abc.ByteStream, max_frame_size: int) -> None:
        self._stream = stream
        self._reader = FrameReader(max_frame_size)
        self.received = 0
        self.first_bytes = b""

    @classmethod
    async def open(
        cls, host: str, port: int, ssl_context: ssl.SSLContext | None, max_frame_size: int
    ) -> _AnyioFrameStream:
        stream: anyio.abc.ByteStream = await anyio.connect_tcp(host, port)
        if ssl_context is not None:
            try:
                stream = await TLSStream.wrap(
                    stream, ssl_context=ssl_context, hostname=host, standard_compatible=False
                )
            except (OSError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
                with anyio.move_on_after(1, shield=True):
                    await stream.aclose()  # the TCP connection must not outlive the failed handshake
                raise TLSHandshakeFailed(exc) from exc
            except BaseException:
                with anyio.move_on_after(1, shield=True):
                    await stream.aclose()
                raise
        return cls(stream, max_frame_size)

    @property
    def buffered(self) -> int:
        return self._reader.buffered

    def write_nowait(self, data: OutFrame) -> bool:
        return False  # an anyio stream's send may always wait

    def abort(self) -> None:
        # only for what write_nowait() wrote, which is nothing here
        raise NotImplementedError("an anyio stream is closed by aclose()")

    async def send(self, data: OutFrame) -> None:
        await self._stream.send(data if isinstance(data, bytes) else b"".join(data))

    def handle_frames_directly(self, handler: Callable[[Frame], bool]) -> None:
        pass  # frames arrive only through receive_frames() here

    async def receive_frames(self) -> list[Frame]:
        while True:
            data = await self._stream.receive(256 * 1024)
            if len(self.first_bytes) < FIRST_BYTES:
                self.first_bytes = _first_bytes(self.first_bytes, data)
            self.received += len(data)
            frames = self._reader.feed(data)
            if frames:
                return frames

    async def aclose(self) -> None:
        await self._stream.aclose()
