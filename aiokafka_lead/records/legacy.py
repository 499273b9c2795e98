"""Legacy message sets, magic v0 and v1 (KIP-32): decode only.

Old topics can still return them on fetch; clients only ever write magic v2. Each top-level
message becomes one pseudo-batch with the same attributes as :class:`RecordBatch`. A
compressed "wrapper" message carries an inner message set in its value; with magic v1 the
inner offsets are relative (KIP-31): absolute = wrapper offset - last inner offset + inner.

Message: offset int64, message_size int32, crc uint32 (zlib CRC32 over magic..end),
magic int8, attributes int8, [timestamp int64 if magic 1], key bytes, value bytes
(int32 length, -1 = null).
"""

from __future__ import annotations

import struct
import zlib

from aiokafka_lead.errors import CorruptRecordError, DecodeError
from aiokafka_lead.records.batch import Record, TimestampType
from aiokafka_lead.records.compression import (
    CompressionType,
    decompress,
)
from aiokafka_lead.records.span import BatchSpan

__all__ = ["LegacyRecordBatch"]

_PREFIX = struct.Struct(">qiIbb")  # offset, message_size, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
LOG_OVERHEAD = 12
_MIN_SIZE = {0: 14, 1: 22}  # crc .. value length, empty key and value
_TIMESTAMP_TYPE_BIT = 0x08
_NO_TIMESTAMP = -1


class _Message:
    __slots__ = ("attributes", "crc", "end", "key", "magic", "offset", "timestamp", "value")

    offset: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    end: int
    key: bytes | None
    value: bytes | None

    def __init__(self, buf: bytes, pos: int, end: int) -> None:
        """Parse the message at ``buf[pos:]``; it must fit entirely before ``end``."""
        if pos + LOG_OVERHEAD + _MIN_SIZE[0] > end:
            raise DecodeError("truncated legacy message")
        self.offset, size, self.crc, magic, self.attributes = _PREFIX.unpack_from(buf, pos)
        if magic not in _MIN_SIZE:
            raise DecodeError(f"invalid legacy message magic {magic}")
        self.magic = magic
        msg_end = pos + LOG_OVERHEAD + size
        if size < _MIN_SIZE[magic] or msg_end > end:
            raise DecodeError(f"invalid legacy message size {size}")
        p = pos + LOG_OVERHEAD + 6
        if magic == 1:
            (self.timestamp,) = _INT64.unpack_from(buf, p)
            p += 8
        else:
            self.timestamp = _NO_TIMESTAMP
        self.key, p = _read_bytes(buf, p, msg_end)
        if p + 4 > msg_end:
            raise DecodeError("truncated legacy message value")
        self.value, p = _read_bytes(buf, p, msg_end)
        if p != msg_end:
            raise DecodeError("legacy message size does not match its fields")
        self.end = msg_end


def _read_bytes(buf: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    n: int = _INT32.unpack_from(buf, pos)[0]
    pos += 4
    if n == -1:
        return None, pos
    if n < 0 or pos + n > end:
        raise DecodeError(f"invalid legacy bytes length {n}")
    return buf[pos : pos + n], pos + n


class LegacyRecordBatch(BatchSpan):
    """One top-level v0/v1 message (plain or compressed wrapper) seen as a batch."""

    __slots__ = (
        "_message",
        "_records",
        "compression_type",
        "last_offset",
        "magic",
        "max_timestamp",
        "timestamp_type",
    )

    partition_leader_epoch = -1
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    is_transactional = False
    is_control = False
    control_type = None

    def _read_header(self) -> int:
        try:
            msg = _Message(self._buf, self._start, len(self._buf))
        except DecodeError as exc:
            raise DecodeError(f"{exc} (topic={self.topic}, partition={self.partition})") from None
        self._message = msg
        self._records: list[Record] | None = None
        self.magic = msg.magic
        self.compression_type = msg.attributes & 0x07
        if msg.magic == 0:
            self.timestamp_type = TimestampType.NO_TIMESTAMP_TYPE
        elif msg.attributes & _TIMESTAMP_TYPE_BIT:
            self.timestamp_type = TimestampType.LOG_APPEND_TIME
        else:
            self.timestamp_type = TimestampType.CREATE_TIME
        self.last_offset = msg.offset
        self.max_timestamp = msg.timestamp
        return msg.end

    @property
    def base_offset(self) -> int:
        """First offset; for a wrapper this needs the inner messages (decompresses)."""
        if not self.compression_type:
            return self.last_offset
        return self.records()[0].offset

    @property
    def base_timestamp(self) -> int:
        """The top-level message's timestamp (-1 for magic v0)."""
        return self.max_timestamp

    @property
    def record_count(self) -> int:
        return len(self.records()) if self.compression_type else 1

    def is_valid(self) -> bool:
        crc = zlib.crc32(memoryview(self._buf)[self._start + 16 : self._end])
        return crc == self._message.crc

    def validate_crc(self) -> None:
        """Raise :class:`CorruptRecordError` naming topic, partition and offset."""
        if not self.is_valid():
            raise self._corrupt(f"legacy message CRC32 mismatch (stored {self._message.crc:#010x})")

    def records(self) -> list[Record]:
        if self._records is None:
            self._records = self._decode()
        return self._records

    def _error_offset(self) -> int:
        return self.last_offset

    def _decode(self) -> list[Record]:
        msg = self._message
        codec = self.compression_type
        if not codec:
            return [Record(msg.offset, msg.timestamp, msg.key, msg.value, ())]
        if codec > CompressionType.ZSTD or (codec == CompressionType.ZSTD):
            # zstd arrived with magic v2 (KIP-110); a legacy wrapper cannot carry it.
            raise DecodeError(f"invalid legacy compression codec {codec}{self._where()}")
        if msg.value is None:
            raise DecodeError(f"compressed legacy wrapper without a value{self._where()}")
        try:
            inner = decompress(
                codec,
                msg.value,
                self._max_decompressed_size,
                legacy_lz4_header=msg.magic == 0,
            )
        except CorruptRecordError as exc:
            raise self._corrupt(str(exc)) from None
        except DecodeError as exc:
            raise DecodeError(f"{exc}{self._where()}") from None
        messages: list[_Message] = []
        pos = 0
        end = len(inner)
        try:
            while pos < end:
                m = _Message(inner, pos, end)
                if m.attributes & 0x07:
                    raise DecodeError("nested compression in a legacy wrapper")
                messages.append(m)
                pos = m.end
        except DecodeError as exc:
            raise DecodeError(f"{exc}{self._where()}") from None
        if not messages:
            raise DecodeError(f"empty legacy wrapper message{self._where()}")
        shift = msg.offset - messages[-1].offset if msg.magic > 0 else 0
        log_append = self.timestamp_type == TimestampType.LOG_APPEND_TIME
        return [
            Record(
                m.offset + shift,
                msg.timestamp if log_append else m.timestamp,
                m.key,
                m.value,
                (),
            )
            for m in messages
        ]
