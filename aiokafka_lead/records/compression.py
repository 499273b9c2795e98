"""Compression codecs with Kafka's framing quirks and bounded decompression.

Quirks handled here so the batch code stays codec-agnostic:

* snappy: Java writes xerial-snappy framing (``\\x82SNAPPY\\x00`` + version + compat, then
  ``[int32 length][raw block]``...). We write the same so every consumer can read it, and
  read both xerial framing and plain raw snappy.
* lz4: the LZ4 *frame* format. Magic v0 messages were written with a broken frame header
  checksum (KAFKA-3160: the checksum covered the magic number too); :func:`decompress` with
  ``legacy_lz4_header=True`` rewrites that checksum before decoding.
* zstd: frames written by zstd-jni's stream usually omit the content size, so the output
  bound is derived from the block headers (each compressed block inflates to at most 128 KiB).

Every decompression is bounded by ``max_size``; exceeding it raises
:class:`CorruptRecordError` (a decompression bomb). Malformed input raises
:class:`DecodeError`; a missing optional library raises :class:`UnsupportedCodecError`.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum
from typing import Any

from aiokafka_lead.errors import CorruptRecordError, DecodeError, UnsupportedCodecError

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "CompressionType",
    "compress",
    "decompress",
    "require_codec",
]

#: Default per-batch bound on decompressed bytes.
DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024

_INSTALL_HINT = "pip install 'aiokafka_lead[codecs]'"


class CompressionType(IntEnum):
    """Codec ids of attributes bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def _cramjam() -> Any:
    try:
        import cramjam  # optional dependency, imported on first use
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise UnsupportedCodecError(f"snappy and zstd need the cramjam library: {_INSTALL_HINT}") from exc
    return cramjam


def require_codec(codec: int) -> None:
    """Raise UnsupportedCodecError (naming the pip extra) if ``codec``'s library is missing."""
    if codec in (CompressionType.SNAPPY, CompressionType.ZSTD):
        _cramjam()
    elif codec == CompressionType.LZ4:
        _lz4_frame()


def _lz4_frame() -> Any:
    try:
        import lz4.frame
    except ImportError as exc:  # pragma: no cover
        raise UnsupportedCodecError(f"lz4 needs the lz4 library: {_INSTALL_HINT}") from exc
    return lz4.frame


# ---------------------------------------------------------------- compress

_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_MAGIC = _XERIAL_HEADER[:8]
_XERIAL_BLOCK = 32 * 1024  # xerial-snappy's default block size
_INT32 = struct.Struct(">i")


def compress(codec: int, data: bytes | bytearray | memoryview, level: int | None = None) -> bytes:
    """Compress ``data`` the way the Java producer does for ``codec``.

    ``level`` is KIP-390's ``compression.<codec>.level``; ``None`` means gzip 6, zstd 3 and
    lz4's fast mode (the cheapest on the producer's hot path; Java 3.8+ defaults to 9).
    Snappy has no levels.
    """
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        c = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if codec == CompressionType.LZ4:
        # Like Java's KafkaLZ4BlockOutputStream: 64 KiB *independent* blocks (its reader
        # decompresses each block on its own, so linked blocks would break it beyond 64 KiB),
        # no content size, no content checksum.
        frame = _lz4_frame()
        return bytes(
            frame.compress(
                data,
                compression_level=0 if level is None else level,
                block_size=frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                store_size=False,
            )
        )
    if codec == CompressionType.SNAPPY:
        raw = _cramjam().snappy.compress_raw
        view = memoryview(data)
        parts = [_XERIAL_HEADER]
        for start in range(0, len(view), _XERIAL_BLOCK):
            block = bytes(raw(view[start : start + _XERIAL_BLOCK]))
            parts.append(_INT32.pack(len(block)))
            parts.append(block)
        return b"".join(parts)
    if codec == CompressionType.ZSTD:
        return bytes(_cramjam().zstd.compress(data, level=3 if level is None else level))
    raise UnsupportedCodecError(f"unknown compression codec id {codec}")


# ---------------------------------------------------------------- decompress


def decompress(
    codec: int,
    data: bytes | memoryview,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    *,
    legacy_lz4_header: bool = False,
) -> bytes:
    """Inflate ``data``; never produce more than ``max_size`` bytes."""
    if codec == CompressionType.GZIP:
        return _gunzip(data, max_size)
    if codec == CompressionType.LZ4:
        return _unlz4(data, max_size, legacy_lz4_header)
    if codec == CompressionType.SNAPPY:
        return _unsnappy(data, max_size)
    if codec == CompressionType.ZSTD:
        return _unzstd(data, max_size)
    if codec == CompressionType.NONE:
        return bytes(data)
    raise DecodeError(f"unknown compression codec id {codec}")


def _bomb(max_size: int) -> CorruptRecordError:
    return CorruptRecordError(f"decompressed batch exceeds the {max_size} byte limit")


def _gunzip(data: bytes | memoryview, max_size: int) -> bytes:
    out: list[bytes] = []
    total = 0
    rest: bytes | memoryview = data
    # Java's GZIPInputStream reads concatenated members; so do we.
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(rest, max_size - total + 1)
        except zlib.error as exc:
            raise DecodeError(f"invalid gzip data: {exc}") from None
        total += len(chunk)
        if total > max_size:
            raise _bomb(max_size)
        out.append(chunk)
        if not d.eof:
            raise DecodeError("truncated gzip data")
        rest = d.unused_data
        if not rest:
            return b"".join(out) if len(out) > 1 else out[0]


#: the first output limit of an lz4 frame's decompression, as a multiple of its size
LZ4_FIRST_OUTPUT_FACTOR = 4


def _unlz4(data: bytes | memoryview, max_size: int, legacy_header: bool) -> bytes:
    """Frames from Kafka's producers do not state their content size. The decompressor
    allocates the output limit it is given up front, so the limit starts near the likely size
    and doubles while more output comes, ``max_size`` at most (a limit of ``max_size`` from
    the start costs a 64 MiB allocation per batch)."""
    if legacy_header:
        data = _fix_kafka3160_header(bytes(data))
    d = _lz4_frame().LZ4FrameDecompressor()
    out: list[bytes] = []
    total = 0
    pending: bytes | memoryview = data
    limit = min(max_size + 1, max(LZ4_FIRST_OUTPUT_FACTOR * len(data), 65_536))
    while True:
        try:
            chunk = d.decompress(pending, max_length=limit)
        except RuntimeError as exc:
            raise DecodeError(f"invalid lz4 frame: {exc}") from None
        total += len(chunk)
        if total > max_size:
            raise _bomb(max_size)
        out.append(chunk)
        if d.eof or d.needs_input:
            break
        pending = b""  # more output of the input already given
        limit = min(max_size + 1 - total, max(total, 65_536))
    if not d.eof:
        raise DecodeError("truncated lz4 frame")
    return out[0] if len(out) == 1 else b"".join(out)


def _read_u32(
    field: struct.Struct, buf: bytes | memoryview, pos: int, end: int, what: str
) -> tuple[int, int]:
    """The 4-byte ``field`` at ``pos`` (before ``end``) and the position after it."""
    if pos + 4 > end:
        raise DecodeError(f"truncated {what}")
    (value,) = field.unpack_from(buf, pos)
    return value, pos + 4


def _unsnappy(data: bytes | memoryview, max_size: int) -> bytes:
    snappy = _cramjam().snappy
    view = memoryview(data)
    try:
        if bytes(view[:8]) != _XERIAL_MAGIC:
            if snappy.decompress_raw_len(view) > max_size:
                raise _bomb(max_size)
            return bytes(snappy.decompress_raw(view))
        if len(view) < 16:
            raise DecodeError("truncated xerial snappy header")
        pos = 16
        end = len(view)
        out: list[bytes] = []
        total = 0
        while pos < end:
            n, pos = _read_u32(_INT32, view, pos, end, "xerial snappy block length")
            if n < 0 or pos + n > end:
                raise DecodeError("xerial snappy block overruns its buffer")
            block = view[pos : pos + n]
            pos += n
            total += snappy.decompress_raw_len(block)
            if total > max_size:
                raise _bomb(max_size)
            out.append(bytes(snappy.decompress_raw(block)))
        return b"".join(out)
    except (DecodeError, CorruptRecordError):
        raise
    except Exception as exc:  # cramjam.DecompressionError and friends
        raise DecodeError(f"invalid snappy data: {exc}") from None


_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 128 * 1024
_UINT32_LE = struct.Struct("<I")


def _zstd_output_bound(buf: bytes) -> int:
    """Upper bound on a zstd stream's output, from headers only (no decoding)."""
    pos = 0
    end = len(buf)
    bound = 0
    while pos < end:
        magic, pos = _read_u32(_UINT32_LE, buf, pos, end, "zstd frame")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            n, pos = _read_u32(_UINT32_LE, buf, pos, end, "zstd skippable frame")
            pos += n
            continue
        if magic != _ZSTD_MAGIC:
            raise DecodeError("invalid zstd frame magic")
        if pos >= end:
            raise DecodeError("truncated zstd frame header")
        fhd = buf[pos]
        pos += 1
        single_segment = fhd & 0x20
        pos += (0 if single_segment else 1) + (0, 1, 2, 4)[fhd & 3]
        pos += (1 if single_segment else 0, 2, 4, 8)[fhd >> 6]
        while True:
            if pos + 3 > end:
                raise DecodeError("truncated zstd block header")
            header = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
            pos += 3
            block_type = (header >> 1) & 3
            size = header >> 3
            if block_type == 0:  # raw
                bound += size
                pos += size
            elif block_type == 1:  # RLE: one byte repeated ``size`` times
                bound += size
                pos += 1
            elif block_type == 2:
                bound += _ZSTD_BLOCK_MAX
                pos += size
            else:
                raise DecodeError("reserved zstd block type")
            if header & 1:
                break
        if fhd & 4:
            pos += 4  # content checksum
    if pos > end:
        raise DecodeError("truncated zstd frame")
    return bound


def _unzstd(data: bytes | memoryview, max_size: int) -> bytes:
    zstd = _cramjam().zstd
    buf = bytes(data)
    if _zstd_output_bound(buf) > max_size:
        raise _bomb(max_size)
    try:
        return bytes(zstd.decompress(buf))
    except Exception as exc:
        raise DecodeError(f"invalid zstd data: {exc}") from None


# ---------------------------------------------------------------- KAFKA-3160

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32, needed only for the few bytes of an lz4 frame descriptor."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                (lane,) = _UINT32_LE.unpack_from(data, pos)
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (lane,) = _UINT32_LE.unpack_from(data, pos)
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _fix_kafka3160_header(buf: bytes) -> bytes:
    """Rewrite the frame header checksum that magic v0 producers computed wrongly."""
    if len(buf) < 7:
        return buf
    flg = buf[4]
    desc_end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if desc_end >= len(buf):
        return buf
    hc = (_xxh32(buf[4:desc_end]) >> 8) & 0xFF
    return buf[:desc_end] + bytes((hc,)) + buf[desc_end + 1 :]
