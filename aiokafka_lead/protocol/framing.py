"""Request/response framing: the 4-byte size prefix and the request/response headers.

Error contract: every decode function here (and ``FrameReader.feed``) raises only
``aiokafka_lead.errors.DecodeError`` on malformed input; anything else is a bug.

Frames handed out by ``FrameReader`` and taken by the ``decode_*`` functions do NOT include
the size prefix; everything ``encode_*`` returns does (ready to write to a socket).
Header versions (KIP-482): requests use header v1 (non-flexible bodies) or v2 (flexible,
with a tagged-field section); responses use v0 or v1, except ApiVersions responses,
which are always v0 so a client can read the error of a request version the broker lacks.
Note that the request header's client_id stays a non-compact nullable string even in v2.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.protocol.generated import REQUEST_CLASSES
from aiokafka_lead.protocol.primitives import (
    I32,
    ZERO,
    Buf,
    as_view,
    read_nullable_string,
    read_uvarint,
    write_nullable_string,
)
from aiokafka_lead.protocol.schema import (
    DECODE_FAILURES,
    Request,
    Response,
    Struct,
    skip_tagged_fields,
)

MiB = 1024 * 1024
R = TypeVar("R", bound=Response)
#: answers at least this big are decoded in a worker thread (~20 ms of decoding on the loop)
THREAD_DECODE_BYTES = 256 * 1024
_REQ_HEAD = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def _size(parts: list[Buf]) -> int:
    return sum(len(p) if type(p) is bytes else memoryview(p).nbytes for p in parts)


def encode_request(body: Request, version: int, correlation_id: int, client_id: str | None) -> bytes:
    """Size prefix + request header (v1/v2 by the body's flexibility) + body, one copy."""
    parts: list[Buf] = [b"", _REQ_HEAD.pack(body.API_KEY, version, correlation_id)]
    ap = parts.append
    write_nullable_string(ap, client_id)
    if type(body).header_version(version) >= 2:
        ap(ZERO)
    body.encode_into(ap, version)
    parts[0] = I32.pack(_size(parts))
    return b"".join(parts)


#: a request frame to write: its bytes, or its pieces in order (large record batches are
#: written as they are instead of being copied into one buffer)
OutFrame = bytes | list[bytes | memoryview]


def frame_size(frame: OutFrame) -> int:
    return len(frame) if isinstance(frame, bytes) else sum(map(len, frame))


class WireRequest:
    """A request that writes its own frame and decodes its own answer, for the requests sent
    so often that their generated objects cost more than their bytes (``produce_wire.py``).
    ``Connection.submit`` takes one where it takes a generated request."""

    __slots__ = ()
    API_KEY: ClassVar[int]
    RESPONSE_CLASS: ClassVar[type[Response]]

    def frame(self, version: int, correlation_id: int, client_id: str | None) -> OutFrame:
        """What :func:`encode_request` gives for the request, or those bytes in pieces (the
        answer's version is this one)."""
        raise NotImplementedError

    def decode(self, frame: Buf) -> Any:
        """The answer to the last :meth:`frame` (a response frame without its size prefix)."""
        raise NotImplementedError


def encode_response(body: Response, version: int, correlation_id: int) -> bytes:
    """Size prefix + response header (v0/v1) + body; used by the in-process fake broker."""
    parts: list[Buf] = [b"", I32.pack(correlation_id)]
    ap = parts.append
    if type(body).header_version(version) >= 1:
        ap(ZERO)
    body.encode_into(ap, version)
    parts[0] = I32.pack(_size(parts))
    return b"".join(parts)


class _Tags(Struct):
    """Holder for header tagged fields (none are defined that a client needs)."""

    __slots__ = ()


def _skip_header_tags(buf: memoryview, pos: int) -> int:
    ntags, pos = read_uvarint(buf, pos)
    if ntags:
        holder = _Tags()
        holder.unknown_tagged_fields = None
        pos = skip_tagged_fields(holder, buf, pos, ntags)
    return pos


def _malformed(what: str, exc: BaseException) -> DecodeError:
    """What a truncated or garbled ``what`` made the readers raise, as a DecodeError (a
    plain try block: it costs nothing on the way through, a context manager does)."""
    return DecodeError(f"malformed {what} ({exc!r})")


def _read_request_header(buf: memoryview) -> tuple[RequestHeader, type[Request], int]:
    try:
        api_key, api_version, correlation_id = _REQ_HEAD.unpack_from(buf, 0)
        cls = REQUEST_CLASSES.get(api_key)
        if cls is None:
            raise DecodeError(f"unknown api key {api_key}")
        client_id, pos = read_nullable_string(buf, 8)
        if cls.header_version(api_version) >= 2:
            pos = _skip_header_tags(buf, pos)
    except DecodeError:
        raise
    except DECODE_FAILURES as exc:
        raise _malformed("request header", exc) from exc
    return RequestHeader(api_key, api_version, correlation_id, client_id), cls, pos


def peek_request_header(frame: Buf) -> RequestHeader:
    """The header alone, e.g. to answer an unsupported ApiVersions version with error 35."""
    return _read_request_header(as_view(frame))[0]


def decode_request(frame: Buf) -> tuple[RequestHeader, Request]:
    """Header and body of a request frame (no size prefix), as a broker reads it."""
    buf = as_view(frame)
    header, cls, pos = _read_request_header(buf)
    body, end = cls.decode_at(buf, pos, header.api_version)
    if end != len(buf):
        raise DecodeError(f"{cls.__name__}: {len(buf) - end} trailing bytes after the body")
    return header, body


def peek_correlation_id(frame: Buf) -> int:
    """The correlation id of a response frame, to find the waiting request."""
    if len(frame) < 4:
        raise DecodeError("response frame shorter than its correlation id")
    (correlation_id,) = I32.unpack_from(frame, 0)
    result: int = correlation_id
    return result


def decode_response(frame: Buf, response_cls: type[R], version: int) -> tuple[int, R]:
    """Correlation id and body of a response frame (no size prefix)."""
    buf = as_view(frame)
    try:
        (correlation_id,) = I32.unpack_from(buf, 0)
        pos = 4
        if response_cls.header_version(version) >= 1:
            pos = _skip_header_tags(buf, pos)
    except DecodeError:
        raise
    except DECODE_FAILURES as exc:
        raise _malformed("response header", exc) from exc
    body, end = response_cls.decode_at(buf, pos, version)
    if end != len(buf):
        raise DecodeError(
            f"{response_cls.__name__} v{version}: {len(buf) - end} trailing bytes after the body"
        )
    return correlation_id, body


def check_frame_size(size: int, limit: int) -> int:
    """A frame's size prefix, refused when negative or over ``limit``."""
    if size < 0 or size > limit:
        raise DecodeError(f"frame size {size} outside 0..{limit}")
    return size


class FrameReader:
    """Splits a byte stream into size-prefixed frames (sans-I/O: feed bytes, get frames).

    Frames come back without their prefix. When a chunk holds whole frames and nothing is
    buffered, they are zero-copy views of the (immutable) chunk; otherwise one copy is made.
    A negative or over-limit size is rejected as soon as its 4 bytes arrive, so a hostile
    peer cannot make the reader buffer gigabytes. After a DecodeError the stream is
    unusable: close the connection.
    """

    __slots__ = ("_buf", "_max", "_need")

    def __init__(self, max_frame_size: int = 100 * MiB) -> None:
        self._max = max_frame_size
        self._buf = bytearray()
        self._need = -1  # total bytes (prefix + body) of the frame being buffered

    def _check(self, size: int) -> int:
        return check_frame_size(size, self._max)

    def feed(self, data: Buf) -> list[memoryview | bytes]:
        frames: list[memoryview | bytes] = []
        if not self._buf:
            chunk = data if type(data) is bytes else bytes(data)
            view = memoryview(chunk)
            pos = self._split(view, frames)
            if pos < len(chunk):
                self._buf += view[pos:]
            return frames
        self._buf += data
        buf = self._buf
        if self._need > len(buf):
            return frames
        pos = self._split(buf, frames)
        if pos == len(buf):
            self._buf = bytearray()  # drop the capacity a big frame left behind
        else:
            del buf[:pos]
        return frames

    def _split(self, buf: memoryview | bytearray, frames: list[memoryview | bytes]) -> int:
        """Appends the whole frames at the start of ``buf`` to ``frames`` (views of a view,
        copies out of the internal buffer) and returns where the rest starts; ``_need`` is
        then the full size of the frame begun there (-1: its size is not known yet)."""
        self._need = -1
        pos, total = 0, len(buf)
        while total - pos >= 4:
            size = self._check(I32.unpack_from(buf, pos)[0])
            if total - pos - 4 < size:
                self._need = 4 + size
                break
            frame = buf[pos + 4 : pos + 4 + size]
            frames.append(frame if isinstance(frame, memoryview) else bytes(frame))
            pos += 4 + size
        return pos

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame."""
        return len(self._buf)


class BufferedFrameReader:
    """Splits a byte stream into frames, receiving straight into buffers it owns (for
    :class:`asyncio.BufferedProtocol`: :meth:`get_buffer`, then :meth:`buffer_updated`).

    Frames up to ``scratch_size`` bytes are received into one scratch buffer kept for the
    connection's life and copied out as ``bytes`` of their exact size; a bigger frame is
    received straight into a ``bytearray`` of its size, allocated once its size prefix has
    arrived, and handed over as a view of it. So no read allocates more than what it keeps,
    and nothing is copied twice. Sizes are checked like :class:`FrameReader`'s, but
    :meth:`buffer_updated` does not raise (it runs in the event loop's callback): it returns
    the frames before a bad size prefix and sets :attr:`error`; the stream is unusable then.
    """

    __slots__ = ("_big", "_big_filled", "_filled", "_max", "_scratch", "_view", "error")

    def __init__(self, max_frame_size: int = 100 * MiB, scratch_size: int = 64 * 1024) -> None:
        self._max = max_frame_size
        self._scratch = bytearray(scratch_size)
        self._view = memoryview(self._scratch)
        self._filled = 0  # bytes at the start of the scratch buffer not yet part of a frame
        self._big: memoryview | None = None  # the body of the big frame being received
        self._big_filled = 0
        #: the bad size prefix that ended the stream
        self.error: DecodeError | None = None

    def get_buffer(self) -> memoryview:
        """Where the next bytes received go (never empty)."""
        if self._big is not None:
            return self._big[self._big_filled :]
        return self._view[self._filled :]

    def buffer_updated(self, nbytes: int) -> list[memoryview | bytes]:
        """``nbytes`` were written into the last :meth:`get_buffer`: the frames completed."""
        big = self._big
        if big is not None:
            self._big_filled += nbytes
            if self._big_filled < len(big):
                return []
            self._big = None
            return [big]
        view = self._view
        frames: list[memoryview | bytes] = []
        pos, total = 0, self._filled + nbytes
        while total - pos >= 4:
            try:
                size = check_frame_size(I32.unpack_from(view, pos)[0], self._max)
            except DecodeError as exc:
                self.error = exc
                break
            start = pos + 4
            if total - start >= size:
                frames.append(bytes(view[start : start + size]))
                pos = start + size
            elif 4 + size > len(view):  # received into a buffer of its own from here on
                body = memoryview(bytearray(size))
                have = total - start
                body[:have] = view[start:total]
                self._big, self._big_filled = body, have
                pos = total
            else:
                break
        if pos:
            rest = total - pos
            if rest:
                view[:rest] = view[pos:total]
            total = rest
        self._filled = total
        return frames

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame."""
        if self._big is not None:
            return 4 + self._big_filled
        return self._filled
