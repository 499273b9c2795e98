"""Readers and writers of the Kafka wire primitives.

Error contract: the public decode entry points (``Struct.decode``, ``framing``) raise
only ``aiokafka_lead.errors.DecodeError``; anything else escaping them is a bug.
The readers here are the inner loop, so for speed they let ``IndexError`` and
``struct.error`` escape on truncated input and the entry point converts those; every
length prefix is checked against the remaining bytes *before* anything is allocated.

Readers take ``(buf, pos)`` with ``buf`` a one-dimensional byte ``memoryview`` and
return ``(value, new_pos)``. Writers take an ``append`` callable (``list.append`` of
the parts list) so a message is joined once at the end instead of being re-copied.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

from aiokafka_lead.errors import DecodeError

Buf: TypeAlias = bytes | bytearray | memoryview
Appender: TypeAlias = Callable[[Buf], None]
_T = TypeVar("_T")

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
U16 = struct.Struct(">H")
U32 = struct.Struct(">I")
F64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)

NULL16 = b"\xff\xff"
NULL32 = b"\xff\xff\xff\xff"
ZERO = b"\x00"

_UV_SMALL = tuple(bytes((i,)) for i in range(128))


def as_view(data: Buf) -> memoryview:
    """A flat byte view of ``data`` (no copy)."""
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


# ---------------------------------------------------------------- varints


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (Java's ByteUtils.readUnsignedVarint)."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    value, pos = _read_base128(buf, pos, 5, "unsigned varint")
    return value & 0xFFFFFFFF, pos


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Zig-zag signed 32-bit varint."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_uvarlong(buf: memoryview, pos: int) -> tuple[int, int]:
    return _read_base128(buf, pos, 10, "varlong")


def read_varlong(buf: memoryview, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _read_base128(buf: memoryview, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    """The 7-bit groups at ``pos``, least significant first (the high bit of each byte says
    another follows), of at most ``max_bytes`` bytes."""
    result = 0
    shift = 0
    last_shift = 7 * (max_bytes - 1)
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > last_shift:
            raise DecodeError(f"{what} longer than {max_bytes} bytes")


def uvarint(value: int) -> bytes:
    """Encode an unsigned varint (values below 128 come from a cache)."""
    if 0 <= value < 128:
        return _UV_SMALL[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    return _base128(value)


def varint(value: int) -> bytes:
    if not -(1 << 31) <= value < (1 << 31):
        raise ValueError(f"varint out of range: {value}")
    return uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def varlong(value: int) -> bytes:
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"varlong out of range: {value}")
    return _base128(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _base128(value: int) -> bytes:
    """``value`` (not negative) as ``_read_base128`` reads it."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# ---------------------------------------------------------------- lengths


def _take(buf: memoryview, pos: int, n: int) -> int:
    """End offset of an ``n``-byte field at ``pos``, refusing to run past the buffer."""
    end = pos + n
    if end > len(buf):
        raise DecodeError(f"length {n} at offset {pos} runs past the end ({len(buf)} bytes)")
    return end


def read_array_len(buf: memoryview, pos: int) -> tuple[int, int]:
    """int32 array length; -1 means null. Each element needs at least one byte."""
    (n,) = I32.unpack_from(buf, pos)
    pos += 4
    if n < -1 or n > len(buf) - pos:
        raise DecodeError(f"array length {n} at offset {pos - 4} is impossible")
    return n, pos


def read_compact_array_len(buf: memoryview, pos: int) -> tuple[int, int]:
    """Compact (uvarint N+1) array length; -1 means null."""
    n, pos2 = read_uvarint(buf, pos)
    n -= 1
    if n > len(buf) - pos2:
        raise DecodeError(f"array length {n} at offset {pos} is impossible")
    return n, pos2


def read_fixed_array(
    buf: memoryview, pos: int, n: int, code: str, size: int
) -> tuple[list[int], int]:
    """``n`` fixed-width numbers (``code`` is a struct letter) in one unpack."""
    end = _take(buf, pos, n * size)
    return list(struct.unpack_from(f">{n}{code}", buf, pos)), end


def write_fixed_array(ap: Appender, values: list[int], code: str) -> None:
    ap(struct.pack(f">{len(values)}{code}", *values))


# ---------------------------------------------------------------- strings, bytes and records
# Each is a length then that many bytes: the length an int16 (strings) or an int32 (bytes,
# records), or in flexible versions a compact uvarint of length + 1; null is length -1
# (compact: 0). One reader and one writer serve every combination, per the tables below.


def _reader(
    prefix: struct.Struct | None, null: str | None, convert: Callable[[memoryview], object] | None = None
) -> Callable[[memoryview, int], tuple[Any, int]]:
    """The reader of a length-prefixed field: ``prefix`` is the length's struct (``None``:
    compact); ``null`` names the field in the error a null raises (``None``: null reads as
    ``None``); ``convert`` makes the value of the field's bytes (``None``: UTF-8 text)."""
    size = 0 if prefix is None else prefix.size

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        if prefix is None:
            n, start = read_uvarint(buf, pos)
            n -= 1
        else:
            (n,) = prefix.unpack_from(buf, pos)
            start = pos + size
        if n < 0:
            if null is not None:
                raise DecodeError(f"null in a non-nullable {null} at offset {pos}")
            return None, start
        end = start + n
        if end > len(buf):
            raise DecodeError(f"length {n} at offset {start} runs past the end ({len(buf)} bytes)")
        if convert is None:
            return str(buf[start:end], "utf-8"), end
        return convert(buf[start:end]), end

    return read


def _writer(prefix: struct.Struct | None, null: bytes | None, text: bool) -> Callable[[Appender, Any], None]:
    """The writer of a length-prefixed field: ``prefix`` is the length's struct (``None``:
    compact); ``null`` is what a ``None`` is written as (``None``: a ``None`` raises
    ValueError); ``text``: the value is a ``str``, written as UTF-8 (at most 32767 bytes)."""
    what = "string" if text else "bytes"

    def write(ap: Appender, value: Any) -> None:
        if value is None:
            if null is None:
                raise ValueError(f"None in a non-nullable {what} field")
            ap(null)
            return
        if text:
            value = value.encode("utf-8")
            n = len(value)
            if n > 0x7FFF:
                raise ValueError(f"string of {n} bytes is longer than {0x7FFF}")
        else:
            n = len(value) if type(value) is bytes else memoryview(value).nbytes
        ap(uvarint(n + 1) if prefix is None else prefix.pack(n))
        ap(value)

    return write


Reader: TypeAlias = Callable[[memoryview, int], tuple[_T, int]]
Writer: TypeAlias = Callable[[Appender, _T], None]

read_string: Reader[str] = _reader(I16, "string")
read_nullable_string: Reader[str | None] = _reader(I16, None)
read_compact_string: Reader[str] = _reader(None, "string")
read_compact_nullable_string: Reader[str | None] = _reader(None, None)
read_bytes: Reader[bytes] = _reader(I32, "bytes field", bytes)
read_nullable_bytes: Reader[bytes | None] = _reader(I32, None, bytes)
read_compact_bytes: Reader[bytes] = _reader(None, "bytes field", bytes)
read_compact_nullable_bytes: Reader[bytes | None] = _reader(None, None, bytes)
# Record data is not copied: a view into the caller's buffer.
read_records: Reader[memoryview | None] = _reader(I32, None, memoryview)
read_compact_records: Reader[memoryview | None] = _reader(None, None, memoryview)

write_string: Writer[str | None] = _writer(I16, None, text=True)
write_nullable_string: Writer[str | None] = _writer(I16, NULL16, text=True)
write_compact_string: Writer[str | None] = _writer(None, None, text=True)
write_compact_nullable_string: Writer[str | None] = _writer(None, ZERO, text=True)
write_bytes: Writer[Buf | None] = _writer(I32, None, text=False)
write_nullable_bytes: Writer[Buf | None] = _writer(I32, NULL32, text=False)
write_compact_bytes: Writer[Buf | None] = _writer(None, None, text=False)
write_compact_nullable_bytes: Writer[Buf | None] = _writer(None, ZERO, text=False)


# ---------------------------------------------------------------- uuid


def read_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    end = _take(buf, pos, 16)
    raw = bytes(buf[pos:end])
    if raw == b"\x00" * 16:
        return ZERO_UUID, end
    return uuid.UUID(bytes=raw), end


def write_uuid(ap: Appender, value: uuid.UUID) -> None:
    ap(value.bytes)


# ---------------------------------------------------------------- tagged fields


def write_tagged_fields(
    ap: Appender,
    known: list[tuple[int, bytes]],
    unknown: list[tuple[int, bytes]] | None,
) -> None:
    """Tagged-field section: count, then (tag, size, data) in ascending tag order."""
    fields = known + unknown if unknown else known
    if len(fields) > 1:
        fields = sorted(fields, key=lambda item: item[0])
    ap(uvarint(len(fields)))
    for tag, data in fields:
        ap(uvarint(tag))
        ap(uvarint(len(data)))
        ap(data)


def read_tag_header(buf: memoryview, pos: int) -> tuple[int, int, int]:
    """One tagged field's (tag, start, end), the end checked against the buffer."""
    tag, pos = read_uvarint(buf, pos)
    size, pos = read_uvarint(buf, pos)
    return tag, pos, _take(buf, pos, size)


def check_tag_end(pos: int, end: int, tag: int) -> None:
    if pos != end:
        raise DecodeError(f"tagged field {tag} used {pos - end:+d} bytes more than its size")
