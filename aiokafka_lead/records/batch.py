"""RecordBatch v2 (magic 2) reader: the consumer's hot path.

Layout (KIP-98): baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
crc uint32 (CRC32C over attributes..end), attributes int16, lastOffsetDelta int32,
baseTimestamp int64, maxTimestamp int64, producerId int64, producerEpoch int16,
baseSequence int32, records [count int32] record...

Error contract: structurally bad bytes raise :class:`DecodeError`, a CRC mismatch, a
decompression bomb or record offsets that do not increase within the batch raise
:class:`CorruptRecordError`; nothing else escapes. Header fields
are parsed eagerly (one ``unpack_from``), records only when :meth:`RecordBatch.records` is
called, and compressed payloads are inflated only then.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from enum import IntEnum

from crc32c import crc32c

from aiokafka_lead.errors import CorruptRecordError, DecodeError
from aiokafka_lead.records import native
from aiokafka_lead.records.compression import (
    CompressionType,
    decompress,
)
from aiokafka_lead.records.record import Header, Record
from aiokafka_lead.records.span import BatchSpan
from aiokafka_lead.records.varint import decode_varint

__all__ = [
    "HEADER_SIZE",
    "ControlRecordType",
    "Header",
    "Record",
    "RecordBatch",
    "TimestampType",
    "parse_control_record_key",
]

#: Bytes before the first record: baseOffset .. recordsCount.
HEADER_SIZE = 61
#: ``batchLength`` counts from partitionLeaderEpoch, i.e. after the first 12 bytes.
LOG_OVERHEAD = 12
#: Where the CRC32C coverage starts (the attributes field).
CRC_START = 21
CRC_OFFSET = 17

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
# The CRC-covered part of the header: attributes .. recordsCount.
CRC_HEADER_STRUCT = struct.Struct(">hiqqqhii")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

_CONTROL_KEY = struct.Struct(">hh")


class TimestampType(IntEnum):
    """Attributes bit 3; ``NO_TIMESTAMP_TYPE`` only for magic v0 messages."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(IntEnum):
    """Type field of a control record's key (version int16, type int16)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


def parse_control_record_key(key: bytes | None) -> ControlRecordType:
    """Type of a control record from its key; unknown types map to ``UNKNOWN`` like Java."""
    if key is None or len(key) < 4:
        raise DecodeError("control record key shorter than 4 bytes")
    version, type_ = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise DecodeError(f"invalid control record key version {version}")
    try:
        return ControlRecordType(type_)
    except ValueError:
        return ControlRecordType.UNKNOWN


class RecordBatch(BatchSpan):
    """A magic v2 batch over ``buf[start:end]``; header fields are plain attributes."""

    __slots__ = (
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "compression_type",
        "crc",
        "is_control",
        "is_transactional",
        "last_offset",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "record_count",
        "timestamp_type",
    )

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    def _read_header(self) -> int:
        buf = self._buf
        start = self._start
        if len(buf) - start < HEADER_SIZE:
            raise DecodeError("record batch shorter than its 61-byte header")
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = HEADER_STRUCT.unpack_from(buf, start)
        if self.magic != 2:
            raise DecodeError(f"RecordBatch needs magic 2, got {self.magic}{self._where()}")
        end = start + LOG_OVERHEAD + self.batch_length
        if self.batch_length < HEADER_SIZE - LOG_OVERHEAD or end > len(buf):
            raise DecodeError(f"invalid record batch length {self.batch_length}{self._where()}")
        self.attributes = attributes
        self.compression_type = attributes & COMPRESSION_MASK
        self.timestamp_type = (
            TimestampType.LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME
        )
        self.is_transactional = bool(attributes & TRANSACTIONAL_BIT)
        self.is_control = bool(attributes & CONTROL_BIT)
        self.last_offset = self.base_offset + self.last_offset_delta
        return end

    def _error_offset(self) -> int:
        return self.base_offset

    @property
    def has_delete_horizon(self) -> bool:
        """KIP-534: when set, ``base_timestamp`` carries the tombstone delete horizon."""
        return bool(self.attributes & DELETE_HORIZON_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None

    def is_valid(self) -> bool:
        return bool(crc32c(memoryview(self._buf)[self._start + CRC_START : self._end]) == self.crc)

    def validate_crc(self) -> None:
        """Raise :class:`CorruptRecordError` naming topic, partition and base offset."""
        if not self.is_valid():
            raise self._corrupt(f"record batch CRC32C mismatch (stored {self.crc:#010x})")

    @property
    def control_type(self) -> ControlRecordType | None:
        """For a control batch the marker type (ABORT/COMMIT...), else ``None``.

        Also ``None`` for a control batch emptied by compaction: there is no marker to apply.
        """
        if not self.is_control:
            return None
        records = self.records()
        return parse_control_record_key(records[0].key) if records else None

    def records(self) -> list[Record]:
        """Decode (and, if needed, decompress) the records."""
        buf = self._buf
        pos = self._start + HEADER_SIZE
        end = self._end
        codec = self.compression_type
        if codec:
            if codec > CompressionType.ZSTD:
                raise DecodeError(f"unknown compression codec id {codec}{self._where()}")
            try:
                buf = decompress(codec, memoryview(buf)[pos:end], self._max_decompressed_size)
            except CorruptRecordError as exc:
                raise self._corrupt(str(exc)) from None
            except DecodeError as exc:
                raise DecodeError(f"{exc}{self._where()}") from None
            pos = 0
            end = len(buf)
        count = self.record_count
        if count < 0:
            raise DecodeError(f"negative record count {count}{self._where()}")
        # LOG_APPEND_TIME: every record carries the broker's time, the batch maxTimestamp.
        log_append_time = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_BIT else None
        decode = native.decode_records or _decode_records
        try:
            return decode(buf, pos, end, count, self.base_offset, self.base_timestamp, log_append_time)
        except DecodeError as exc:
            raise DecodeError(f"{exc}{self._where()}") from None
        except CorruptRecordError as exc:
            raise self._corrupt(str(exc)) from None
        except (IndexError, ValueError) as exc:  # reads past the end, bad UTF-8
            raise DecodeError(f"malformed record: {exc}{self._where()}") from None

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"record_count={self.record_count}, compression_type={self.compression_type}, "
            f"is_transactional={self.is_transactional}, is_control={self.is_control})"
        )


_NO_HEADERS: tuple[Header, ...] = ()
# length, attributes, timestampDelta, offsetDelta, key length, value length, header count
_MIN_RECORD_SIZE = 7
# Zigzag decoding of one-byte varints, by byte value.
_ZIGZAG = [(b >> 1) ^ -(b & 1) for b in range(128)]


def _decode_records(  # noqa: PLR0917 - the C twin's positional signature
    buf: bytes,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> list[Record]:
    """The hot loop: one- and two-byte varints are inlined, longer ones call ``decode_varint``;
    key and value (the same field twice) are read by ``_nullable_bytes``.

    The pure-Python twin of ``_speedups.decode_records`` (used when the extension is absent).

    Bounds are checked once per record (``pos == rec_end``) and once per batch (``pos == end``)
    rather than per field: an over-long field only shortens a slice or raises ``IndexError``,
    and the list is returned only after the final check, so nothing from a bad batch escapes.
    Offsets must increase from one record to the next (the first delta at least 0).
    """
    if count > (end - pos) // _MIN_RECORD_SIZE:
        raise DecodeError(f"record count {count} cannot fit in {end - pos} bytes")
    records: list[Record] = []
    append = records.append
    new = tuple.__new__
    cls = Record
    varint = decode_varint
    field = _nullable_bytes
    no_headers = _NO_HEADERS
    zz = _ZIGZAG
    last = base_offset - 1
    for _ in range(count):
        b = buf[pos]
        if b < 0x80:
            rec_end = pos + 1 + zz[b]
            pos += 2  # length and the unused attributes byte
        elif buf[pos + 1] < 0x80:
            v = (b & 0x7F) | (buf[pos + 1] << 7)
            rec_end = pos + 2 + ((v >> 1) ^ -(v & 1))
            pos += 3
        else:
            n, pos = varint(buf, pos, 5)
            rec_end = pos + n
            pos += 1
        b = buf[pos]
        if b < 0x80:
            timestamp = base_timestamp + zz[b]
            pos += 1
        else:
            n, pos = varint(buf, pos, 10)
            timestamp = base_timestamp + n
        b = buf[pos]
        if b < 0x80:
            offset = base_offset + zz[b]
            pos += 1
        elif buf[pos + 1] < 0x80:
            v = (b & 0x7F) | (buf[pos + 1] << 7)
            offset = base_offset + ((v >> 1) ^ -(v & 1))
            pos += 2
        else:
            n, pos = varint(buf, pos, 5)
            offset = base_offset + n
        if offset <= last:
            raise CorruptRecordError(
                f"offset delta {offset - base_offset} follows {last - base_offset}: "
                "offsets in a batch must increase"
            )
        last = offset
        key, pos = field(buf, pos, "key")
        value, pos = field(buf, pos, "value")
        if buf[pos] == 0:
            headers: Sequence[Header] = no_headers
            pos += 1
        else:
            headers, pos = _decode_headers(buf, pos, rec_end)
        if pos != rec_end:
            raise DecodeError("record length does not match its fields")
        append(new(cls, (offset, timestamp, key, value, headers)))
    if pos != end:
        raise DecodeError(f"{end - pos} unexpected bytes after {count} records")
    if log_append_time is not None:
        return [r._replace(timestamp=log_append_time) for r in records]
    return records


def _nullable_bytes(buf: bytes, pos: int, what: str) -> tuple[bytes | None, int]:
    """A record's key or value at ``pos``: its varint length (-1: null), then its bytes."""
    b = buf[pos]
    if b < 0x80:
        n = _ZIGZAG[b]
        pos += 1
    elif buf[pos + 1] < 0x80:
        v = (b & 0x7F) | (buf[pos + 1] << 7)
        n = (v >> 1) ^ -(v & 1)
        pos += 2
    else:
        n, pos = decode_varint(buf, pos, 5)
    if n >= 0:
        return buf[pos : pos + n], pos + n
    if n == -1:
        return None, pos
    raise DecodeError(f"invalid {what} length {n}")


def _decode_headers(buf: bytes, pos: int, rec_end: int) -> tuple[tuple[Header, ...], int]:
    count, pos = decode_varint(buf, pos, 5)
    if count < 0 or count * 2 > rec_end - pos:
        raise DecodeError(f"invalid header count {count}")
    headers: list[Header] = []
    for _ in range(count):
        n, pos = decode_varint(buf, pos, 5)
        if n < 0 or pos + n > rec_end:
            raise DecodeError(f"invalid header key length {n}")
        key = buf[pos : pos + n].decode("utf-8")
        pos += n
        n, pos = decode_varint(buf, pos, 5)
        if n >= 0:
            if pos + n > rec_end:
                raise DecodeError(f"invalid header value length {n}")
            value: bytes | None = buf[pos : pos + n]
            pos += n
        elif n == -1:
            value = None
        else:
            raise DecodeError(f"invalid header value length {n}")
        headers.append((key, value))
    return tuple(headers), pos
