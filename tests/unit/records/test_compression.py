"""Codec framing quirks and bounded decompression."""

from __future__ import annotations

import builtins
import gzip
import struct
from typing import Any

import cramjam
import lz4.frame
import pytest

from aiokafka_lead.errors import CorruptRecordError, DecodeError, UnsupportedCodecError
from aiokafka_lead.records import (
    CompressionType,
    MemoryRecords,
    RecordBatchBuilder,
    compress,
    decompress,
    restamp,
)
from aiokafka_lead.records.compression import _xxh32

DATA = b"".join(b"record %d; " % i for i in range(20_000))  # ~230 KB, several snappy blocks


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_codec_round_trip(codec: int) -> None:
    assert decompress(codec, compress(codec, DATA)) == DATA
    assert decompress(codec, compress(codec, b"")) == b""


def test_snappy_is_written_with_xerial_framing() -> None:
    out = compress(CompressionType.SNAPPY, DATA)
    assert out[:16] == b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
    (first_block,) = struct.unpack_from(">i", out, 16)
    assert bytes(cramjam.snappy.decompress_raw(out[20 : 20 + first_block])) == DATA[:32768]


def test_snappy_reads_raw_blocks_too() -> None:
    raw = bytes(cramjam.snappy.compress_raw(DATA))
    assert decompress(CompressionType.SNAPPY, raw) == DATA


def test_snappy_batch_in_both_framings() -> None:
    builder = RecordBatchBuilder(CompressionType.SNAPPY)
    for i in range(20):
        builder.append(i, None, b"snappy value %d" % i)
    xerial = builder.build()
    (batch,) = MemoryRecords(xerial)
    assert [r.value for r in batch.records()] == [b"snappy value %d" % i for i in range(20)]
    # Re-frame the same records as one raw snappy block (what some non-Java clients write).
    inner = decompress(CompressionType.SNAPPY, xerial[61:])
    raw_payload = bytes(cramjam.snappy.compress_raw(inner))
    body = bytearray(xerial[:61] + raw_payload)
    struct.pack_into(">i", body, 8, len(body) - 12)
    fixed = restamp(bytes(body), producer_id=-1, producer_epoch=-1, base_sequence=-1)
    (batch,) = MemoryRecords(fixed)
    batch.validate_crc()
    assert [r.value for r in batch.records()] == [b"snappy value %d" % i for i in range(20)]


def test_gzip_matches_stdlib_and_accepts_concatenated_members() -> None:
    assert gzip.decompress(compress(CompressionType.GZIP, DATA)) == DATA
    two = gzip.compress(b"abc") + gzip.compress(b"def")
    assert decompress(CompressionType.GZIP, two) == b"abcdef"


def test_lz4_output_limit_starts_near_the_frame_not_at_the_bomb_limit(monkeypatch: Any) -> None:
    """The decompressor allocates the output limit it is given: a 64 MiB limit per batch made
    reading lz4 batches three times slower. The limit starts near the frame's likely size and
    doubles while output keeps coming; the bomb limit still holds."""
    limits: list[int] = []
    real = lz4.frame.LZ4FrameDecompressor

    class Recording(real):  # type: ignore[misc, valid-type]
        def decompress(self, data: Any, max_length: int = -1) -> bytes:
            limits.append(max_length)
            return bytes(super().decompress(data, max_length=max_length))

    monkeypatch.setattr(lz4.frame, "LZ4FrameDecompressor", Recording)
    frame = compress(CompressionType.LZ4, DATA)
    assert decompress(CompressionType.LZ4, frame) == DATA
    assert 0 < limits[0] <= max(4 * len(frame), 65_536)
    redundant = b"x" * 5_000_000  # ~20 KB of lz4: several doublings
    limits.clear()
    assert decompress(CompressionType.LZ4, compress(CompressionType.LZ4, redundant)) == redundant
    assert len(limits) > 2 and max(limits) < 5_000_000
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.LZ4, compress(CompressionType.LZ4, redundant), max_size=4_999_999)


def test_lz4_is_a_standard_frame_with_independent_blocks() -> None:
    out = compress(CompressionType.LZ4, DATA)
    assert lz4.frame.decompress(out) == DATA
    assert out[:4] == b"\x04\x22\x4d\x18"
    flg, bd = out[4], out[5]
    assert flg & 0x20  # block independence: Java's reader decodes each block on its own
    assert not flg & 0x08  # no content size, like Java
    assert bd == 0x40  # 64 KiB blocks


BOMB = b"\x00" * (4 * 1024 * 1024)


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_decompression_bomb_refused(codec: int) -> None:
    packed = compress(codec, BOMB)
    assert len(packed) < len(BOMB) // 20
    with pytest.raises(CorruptRecordError):
        decompress(codec, packed, max_size=1024 * 1024)
    assert decompress(codec, packed, max_size=len(BOMB)) == BOMB


def test_raw_snappy_bomb_refused_from_its_length_header() -> None:
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(BOMB)), 1000)


def test_bomb_inside_a_batch_names_its_location() -> None:
    builder = RecordBatchBuilder(CompressionType.ZSTD, batch_size=1 << 30, base_offset=77)
    builder.append(0, None, BOMB)
    (batch,) = MemoryRecords(builder.build(), topic="t", partition=2, max_decompressed_size=1 << 20)
    batch.validate_crc()
    with pytest.raises(CorruptRecordError) as info:
        batch.records()
    assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 2, 77)


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_garbage_and_truncation_raise_decode_error(codec: int) -> None:
    packed = compress(codec, DATA)
    for bad in (b"", b"\x00" * 7, b"garbage" * 10, packed[: len(packed) // 2], packed[:-1]):
        with pytest.raises((DecodeError, CorruptRecordError)):
            decompress(codec, bad)


def test_unknown_codec() -> None:
    with pytest.raises(DecodeError):
        decompress(6, b"")
    with pytest.raises(UnsupportedCodecError):
        compress(6, b"")


@pytest.mark.parametrize("codec", [2, 4], ids=["snappy", "zstd"])
def test_missing_cramjam_gives_install_hint(codec: int, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "cramjam":
            raise ImportError("no cramjam")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(UnsupportedCodecError, match=r"pip install 'aiokafka_lead\[codecs\]'"):
        compress(codec, b"x")
    with pytest.raises(UnsupportedCodecError, match="codecs"):
        decompress(codec, b"\x00" * 20)


def test_xxh32_reference_values() -> None:
    assert _xxh32(b"") == 0x02CC5D05
    assert _xxh32(b"abc") == 0x32D153FF
    assert _xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def broken_kafka3160_frame(data: bytes) -> bytes:
    """An lz4 frame whose header checksum covers the magic too, as magic v0 producers wrote."""
    frame = bytearray(lz4.frame.compress(data, content_checksum=False))
    flg = frame[4]
    desc_end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    frame[desc_end] = (_xxh32(bytes(frame[:desc_end])) >> 8) & 0xFF
    return bytes(frame)


def test_kafka3160_header_checksum_fixed_for_legacy_v0() -> None:
    broken = broken_kafka3160_frame(DATA)
    with pytest.raises(DecodeError):
        decompress(CompressionType.LZ4, broken)
    assert decompress(CompressionType.LZ4, broken, legacy_lz4_header=True) == DATA


@pytest.mark.parametrize(("codec", "level"), [(1, 1), (1, 9), (3, 9), (3, 12), (4, 1), (4, 19)])
def test_compression_levels(codec: int, level: int) -> None:
    assert decompress(codec, compress(codec, DATA, level)) == DATA
    builder = RecordBatchBuilder(codec, compression_level=level)
    builder.append(0, None, DATA[:5000])
    (batch,) = MemoryRecords(builder.build())
    assert batch.records()[0].value == DATA[:5000]
