"""Zigzag varints (protobuf style) as used inside RecordBatch v2 records.

Rules: encoders append to a ``bytearray``; decoders take ``(buf, pos)`` and return
``(value, new_pos)``. Decoders raise only :class:`DecodeError` (over-long or truncated
varints), so a hostile length never turns into ``IndexError`` or a huge allocation.
"""

from __future__ import annotations

from aiokafka_lead.errors import DecodeError

__all__ = [
    "VARINT_CACHE",
    "VARINT_CACHE_LIMIT",
    "decode_varint",
    "encode_varint",
    "size_of_varint",
    "varint_bytes",
]

#: Values in ``[-1, VARINT_CACHE_LIMIT)`` have a precomputed encoding (see :func:`varint_bytes`).
VARINT_CACHE_LIMIT = 1 << 14


def encode_varint(value: int, out: bytearray) -> None:
    """Append the zigzag varint (or varlong) encoding of ``value`` to ``out``."""
    v = (value << 1) ^ (value >> 63)
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _encode(value: int) -> bytes:
    out = bytearray()
    encode_varint(value, out)
    return bytes(out)


# Index ``value + 1``: lengths (-1 for null), offset and timestamp deltas are nearly always
# small, and a list lookup is several times cheaper than the shifting loop above.
VARINT_CACHE: list[bytes] = [_encode(i) for i in range(-1, VARINT_CACHE_LIMIT)]


def varint_bytes(value: int) -> bytes:
    """The zigzag varint encoding of ``value`` as ``bytes`` (cached for small values)."""
    if -1 <= value < VARINT_CACHE_LIMIT:
        return VARINT_CACHE[value + 1]
    return _encode(value)


def size_of_varint(value: int) -> int:
    """Number of bytes :func:`encode_varint` writes for ``value``."""
    v = (value << 1) ^ (value >> 63)
    size = 1
    while v > 0x7F:
        v >>= 7
        size += 1
    return size


def decode_varint(buf: bytes, pos: int, max_bytes: int = 10) -> tuple[int, int]:
    """Decode a zigzag varint at ``buf[pos]``; ``max_bytes`` is 5 for varint, 10 for varlong."""
    result = 0
    shift = 0
    end = len(buf)
    limit = pos + max_bytes
    while True:
        if pos >= end:
            raise DecodeError("truncated varint")
        if pos >= limit:
            raise DecodeError("varint too long")
        b = buf[pos]
        pos += 1
        if shift == 63 and b & 0x7E:  # a 10th byte can carry only bit 63
            raise DecodeError("varlong overflows 64 bits")
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
