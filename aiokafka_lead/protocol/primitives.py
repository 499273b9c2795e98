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
from typing import TypeAlias

from aiokafka_lead.errors import DecodeError

Buf: TypeAlias = bytes | bytearray | memoryview
Appender: TypeAlias = Callable[[Buf], None]

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
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFF, pos
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint longer than 5 bytes")


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Zig-zag signed 32-bit varint."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_uvarlong(buf: memoryview, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varlong longer than 10 bytes")


def read_varlong(buf: memoryview, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def uvarint(value: int) -> bytes:
    """Encode an unsigned varint (values below 128 come from a cache)."""
    if 0 <= value < 128:
        return _UV_SMALL[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    if not -(1 << 31) <= value < (1 << 31):
        raise ValueError(f"varint out of range: {value}")
    return uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def varlong(value: int) -> bytes:
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"varlong out of range: {value}")
    raw = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
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


# ---------------------------------------------------------------- strings


def read_string(buf: memoryview, pos: int) -> tuple[str, int]:
    (n,) = I16.unpack_from(buf, pos)
    pos += 2
    if n < 0:
        raise DecodeError(f"null in a non-nullable string at offset {pos - 2}")
    end = _take(buf, pos, n)
    return str(buf[pos:end], "utf-8"), end


def read_nullable_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    (n,) = I16.unpack_from(buf, pos)
    pos += 2
    if n < 0:
        return None, pos
    end = _take(buf, pos, n)
    return str(buf[pos:end], "utf-8"), end


def read_compact_string(buf: memoryview, pos: int) -> tuple[str, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError(f"null in a non-nullable string at offset {pos - 1}")
    end = _take(buf, pos, n - 1)
    return str(buf[pos:end], "utf-8"), end


def read_compact_nullable_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _take(buf, pos, n - 1)
    return str(buf[pos:end], "utf-8"), end


def _utf8(value: str | None, max_len: int) -> bytes:
    if value is None:
        raise ValueError("None in a non-nullable string field")
    data = value.encode("utf-8")
    if len(data) > max_len:
        raise ValueError(f"string of {len(data)} bytes is longer than {max_len}")
    return data


def write_string(ap: Appender, value: str | None) -> None:
    data = _utf8(value, 0x7FFF)
    ap(I16.pack(len(data)))
    ap(data)


def write_nullable_string(ap: Appender, value: str | None) -> None:
    if value is None:
        ap(NULL16)
    else:
        write_string(ap, value)


def write_compact_string(ap: Appender, value: str | None) -> None:
    data = _utf8(value, 0x7FFF)
    ap(uvarint(len(data) + 1))
    ap(data)


def write_compact_nullable_string(ap: Appender, value: str | None) -> None:
    if value is None:
        ap(ZERO)
    else:
        write_compact_string(ap, value)


# ---------------------------------------------------------------- bytes and records


def read_bytes(buf: memoryview, pos: int) -> tuple[bytes, int]:
    (n,) = I32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        raise DecodeError(f"null in a non-nullable bytes field at offset {pos - 4}")
    end = _take(buf, pos, n)
    return bytes(buf[pos:end]), end


def read_nullable_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    (n,) = I32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    end = _take(buf, pos, n)
    return bytes(buf[pos:end]), end


def read_compact_bytes(buf: memoryview, pos: int) -> tuple[bytes, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError(f"null in a non-nullable bytes field at offset {pos - 1}")
    end = _take(buf, pos, n - 1)
    return bytes(buf[pos:end]), end


def read_compact_nullable_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _take(buf, pos, n - 1)
    return bytes(buf[pos:end]), end


def read_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    """Record data is not copied: a view into the caller's buffer."""
    (n,) = I32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    end = _take(buf, pos, n)
    return buf[pos:end], end


def read_compact_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _take(buf, pos, n - 1)
    return buf[pos:end], end


def _nbytes(value: Buf) -> int:
    return len(value) if type(value) is bytes else memoryview(value).nbytes


def write_bytes(ap: Appender, value: Buf | None) -> None:
    if value is None:
        raise ValueError("None in a non-nullable bytes field")
    ap(I32.pack(_nbytes(value)))
    ap(value)


def write_nullable_bytes(ap: Appender, value: Buf | None) -> None:
    if value is None:
        ap(NULL32)
    else:
        ap(I32.pack(_nbytes(value)))
        ap(value)


def write_compact_bytes(ap: Appender, value: Buf | None) -> None:
    if value is None:
        raise ValueError("None in a non-nullable bytes field")
    ap(uvarint(_nbytes(value) + 1))
    ap(value)


def write_compact_nullable_bytes(ap: Appender, value: Buf | None) -> None:
    if value is None:
        ap(ZERO)
    else:
        ap(uvarint(_nbytes(value) + 1))
        ap(value)


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
