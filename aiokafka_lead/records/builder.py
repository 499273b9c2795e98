"""RecordBatch v2 builder: the producer's hot path.

The per-record step (:meth:`RecordBatchBuilder.append`: varints, key, value, headers) is
the base class: the C extension's ``RecordsBuffer`` when it is in use (``native.py``), else
:class:`PyRecords`, the pure-Python reference; both give the same bytes, and the tests
compare them (and the Java client's bytes). The batch header, compression and CRC are
Python, once per batch. :class:`PyRecordBatchBuilder` is the builder over the reference.

Drain-time stamping: the idempotent producer learns producer_id, producer_epoch and
base_sequence (and the leader epoch) only when it drains a batch, after records were
appended, and must resend the *same* batch on retry. :meth:`RecordBatchBuilder.build`
therefore encodes and compresses the records exactly once (cached) and on every call only
re-packs the 61-byte header and recomputes the CRC32C; calling it again with the same values
returns identical bytes. :func:`restamp` does the same for code that only holds the bytes.

Size accounting follows Java's MemoryRecordsBuilder: for a compressed batch the size is
estimated ahead as ``uncompressed * ratio * 1.05``, with ``ratio`` supplied by the caller from
a :class:`CompressionRatioEstimator` (per topic and codec), so batches fill up to about
``batch_size`` *after* compression instead of ending up far smaller.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

from crc32c import crc32c

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.records import native
from aiokafka_lead.records.batch import (
    CONTROL_BIT,
    CRC_HEADER_STRUCT,
    CRC_OFFSET,
    CRC_START,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    ControlRecordType,
    Header,
    TimestampType,
)
from aiokafka_lead.records.compression import CompressionType, compress
from aiokafka_lead.records.varint import VARINT_CACHE, VARINT_CACHE_LIMIT, varint_bytes

__all__ = [
    "CompressionRatioEstimator",
    "PyRecordBatchBuilder",
    "RecordBatchBuilder",
    "build_control_batch",
    "restamp",
]

#: Java's COMPRESSION_RATE_ESTIMATION_FACTOR: err on the side of closing a batch early.
COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05

_PREFIX_STRUCT = struct.Struct(">qiibI")  # baseOffset .. crc
_NULL = b"\x01"  # zigzag varint of -1
_ZERO = b"\x00"


class PyRecords:
    """The records section of a batch being filled: the per-record step, in pure Python.

    The reference twin of the C extension's ``RecordsBuffer`` (same attributes, same bytes,
    same errors), which :class:`RecordBatchBuilder` uses as its base when it is built.
    """

    __slots__ = ("_base_timestamp", "_buf", "_count", "_max_timestamp", "_records_limit", "_sealed")

    _buf: bytearray
    _count: int
    _base_timestamp: int
    _max_timestamp: int
    _records_limit: float
    _sealed: bool

    def __new__(cls, *args: object, **kwargs: object) -> Self:
        self = super().__new__(cls)
        self._buf = bytearray()
        self._count = 0
        self._base_timestamp = 0
        self._max_timestamp = -1
        self._records_limit = math.inf
        self._sealed = False
        return self

    @property
    def _records_size(self) -> int:
        return len(self._buf)

    def _records_bytes(self) -> bytes:
        return bytes(self._buf)

    def _sealed_records(self) -> bytes | memoryview:
        """Seal the records (later appends return None) and return them; the C twin
        returns a read-only view of its buffer instead of a copy."""
        self._sealed = True
        return bytes(self._buf)

    def append(
        self,
        timestamp_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> int | None:
        """Append a record; the offset delta, or ``None`` if the batch is full or built.

        The first record always fits, however big: rejecting oversized records
        (``max.request.size``) is the producer's decision, not the builder's.
        """
        if self._sealed:
            return None
        count = self._count
        # Inlined lookups in the varint cache (index value + 1); big values take varint_bytes.
        cache = VARINT_CACHE
        ts_delta = timestamp_ms - self._base_timestamp if count else 0
        key_len, key = _length_and_bytes(key)
        value_len, value = _length_and_bytes(value)
        body = b"".join(
            (
                _ZERO,  # attributes (unused)
                cache[ts_delta + 1] if 0 <= ts_delta < VARINT_CACHE_LIMIT else varint_bytes(ts_delta),
                cache[count + 1] if count < VARINT_CACHE_LIMIT else varint_bytes(count),
                key_len,
                key,
                value_len,
                value,
                _encode_headers(headers) if headers else _ZERO,
            )
        )
        n = len(body)
        length = cache[n + 1] if n < VARINT_CACHE_LIMIT else varint_bytes(n)
        buf = self._buf
        if count and len(buf) + len(length) + len(body) > self._records_limit:
            return None
        buf += length
        buf += body
        if not count:
            self._base_timestamp = timestamp_ms
        self._count = count + 1
        if timestamp_ms > self._max_timestamp:  # noqa: PLR1730 - cheaper than max()
            self._max_timestamp = timestamp_ms
        return count

    def append_column(
        self, timestamp_ms: int, rows: int, values: ArrowBinary | None, keys: ArrowBinary | None, start: int
    ) -> int:
        """Rows ``start``.. of Arrow binary columns as records without headers, all stamped
        ``timestamp_ms``, until the batch is full (the first record always fits) or sealed;
        the first row not appended. A column is ``(validity or None, offsets, data, array
        offset, large)`` as pyarrow gives a binary array's buffers (``large``: 64-bit
        offsets); None: every row null. Offsets outside the data raise ValueError."""
        if not 0 <= start <= rows:
            raise ValueError(f"start {start} must be within 0..rows ({rows})")
        if self._sealed or start == rows:
            return start
        value_rows, key_rows = ArrowRows(values, rows, "value"), ArrowRows(keys, rows, "key")
        for i in range(start, rows):
            if self.append(timestamp_ms, key_rows.row(i), value_rows.row(i)) is None:
                return i
        return rows


#: an Arrow binary column's buffers: (validity or None, offsets, data, array offset, large)
ArrowBinary = tuple[Any, Any, Any, int, bool]


class ArrowRows:
    """The rows of an :data:`ArrowBinary` column as bytes (None where null)."""

    def __init__(self, column: ArrowBinary | None, rows: int, what: str) -> None:
        self.what = what
        self.present = column is not None
        self.base = 0
        if column is None:
            return
        validity, offsets, data, self.base, large = column
        if self.base < 0:
            raise ValueError(f"the {what} column's offset is negative")
        self.offsets = memoryview(offsets).cast("B").cast("q" if large else "i")
        self.data = memoryview(data).cast("B")
        self.validity = None if validity is None else memoryview(validity).cast("B")
        if len(self.offsets) < self.base + rows + 1 or (
            self.validity is not None and len(self.validity) < (self.base + rows + 7) // 8
        ):
            raise ValueError(f"the {what} column's buffers are shorter than its {rows} rows")

    def row(self, i: int) -> bytes | None:
        if not self.present:
            return None
        j = self.base + i
        if self.validity is not None and not self.validity[j >> 3] & (1 << (j & 7)):
            return None
        start, end = self.offsets[j], self.offsets[j + 1]
        if start < 0 or end < start or end > len(self.data):
            raise ValueError(
                f"the {self.what} column's row {i} has offsets {start}..{end} "
                f"outside its {len(self.data)} bytes"
            )
        return bytes(self.data[start:end])


if TYPE_CHECKING:
    _BuilderBase = PyRecords
else:
    _BuilderBase = object


class _Builder(_BuilderBase):
    """Everything of :class:`RecordBatchBuilder` but the per-record step (its records base)."""

    if not TYPE_CHECKING:  # the slots are the concrete classes' (mypy: see PyRecordBatchBuilder)
        __slots__ = ()

    compression_type: int
    batch_size: int
    base_offset: int
    partition_leader_epoch: int
    _compression_level: int | None
    _attributes: int
    _estimate_factor: float
    _payload: bytes | memoryview | None

    def __init__(
        self,
        compression_type: int = CompressionType.NONE,
        batch_size: int = 16384,
        *,
        is_transactional: bool = False,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        compression_ratio_estimate: float = 1.0,
        compression_level: int | None = None,
        base_offset: int = 0,
        partition_leader_epoch: int = -1,
        is_control: bool = False,
    ) -> None:
        if not 0 <= compression_type <= CompressionType.ZSTD:
            raise ValueError(f"unknown compression type {compression_type}")
        self.compression_type = int(compression_type)
        self._compression_level = compression_level
        self.batch_size = batch_size
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        attributes = self.compression_type
        if timestamp_type == TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_BIT
        if is_transactional:
            attributes |= TRANSACTIONAL_BIT
        if is_control:
            attributes |= CONTROL_BIT
        self._attributes = attributes
        self._estimate_factor = (
            compression_ratio_estimate * COMPRESSION_RATE_ESTIMATION_FACTOR if self.compression_type else 1.0
        )
        # Room for record bytes before the (estimated) batch exceeds batch_size.
        self._records_limit = (batch_size - HEADER_SIZE) / self._estimate_factor
        self._payload = None

    @property
    def record_count(self) -> int:
        return self._count

    @property
    def is_closed(self) -> bool:
        """True once built: further appends return ``None``."""
        return self._payload is not None

    @property
    def max_timestamp(self) -> int:
        return self._max_timestamp

    @property
    def uncompressed_size(self) -> int:
        return HEADER_SIZE + self._records_size

    @property
    def compression_ratio(self) -> float:
        """Observed compressed/uncompressed ratio of the records (1.0 before build)."""
        if self._payload is None or not self._records_size:
            return 1.0
        return len(self._payload) / self._records_size

    def size_in_bytes(self) -> int:
        """Built size, or the estimate while open (compressed: ``raw * ratio * 1.05``)."""
        if self._payload is not None:
            return HEADER_SIZE + len(self._payload)
        return HEADER_SIZE + int(self._records_size * self._estimate_factor)

    def has_room_for(self, key: bytes | None, value: bytes | None, headers_size: int = 0) -> bool:
        """Cheap pre-check (upper bound) without encoding, like Java's ``hasRoomFor``."""
        if self._payload is not None:
            return False
        if self._count == 0:
            return True
        # 21: the largest possible length, attributes, deltas and key/value length varints.
        size = 21 + (len(key) if key else 0) + (len(value) if value else 0) + headers_size
        return self._records_size + size <= self._records_limit

    def close(self) -> None:
        """Encode (compress) the records once; later appends return ``None``."""
        if self._payload is None:
            if self._count == 0:
                raise ValueError("cannot build an empty record batch")
            codec = self.compression_type
            records = self._sealed_records()  # the C builder's: a view of its buffer, no copy
            self._payload = compress(codec, records, self._compression_level) if codec else records

    def build(self, *args: Any, **kwargs: Any) -> bytes:
        """The batch bytes, stamped with the given producer fields (:meth:`build_parts`'
        arguments); cheap to call again."""
        return b"".join(self.build_parts(*args, **kwargs))

    def build_parts(
        self,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        *,
        partition_leader_epoch: int | None = None,
        is_transactional: bool | None = None,
    ) -> tuple[bytes, bytes | memoryview]:
        """The batch as (its header, stamped with the given producer fields, and its records):
        the batch is these two written one after the other, and the records (a view of the
        C builder's buffer) are not copied into one buffer with the header."""
        self.close()
        payload = self._payload
        assert payload is not None
        attributes = self._attributes
        if is_transactional is not None:
            attributes = (
                attributes | TRANSACTIONAL_BIT if is_transactional else attributes & ~TRANSACTIONAL_BIT
            )
        count = self._count
        body = CRC_HEADER_STRUCT.pack(
            attributes,
            count - 1,
            self._base_timestamp,
            self._max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
        crc = crc32c(payload, crc32c(body))
        prefix = _PREFIX_STRUCT.pack(
            self.base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(payload),
            self.partition_leader_epoch if partition_leader_epoch is None else partition_leader_epoch,
            2,
            crc,
        )
        return prefix + body, payload


_BUILDER_SLOTS = (
    "_attributes",
    "_compression_level",
    "_estimate_factor",
    "_payload",
    "base_offset",
    "batch_size",
    "compression_type",
    "partition_leader_epoch",
)


class PyRecordBatchBuilder(_Builder, PyRecords):
    """:class:`RecordBatchBuilder` over the pure-Python per-record step (the reference)."""

    __slots__ = _BUILDER_SLOTS


if TYPE_CHECKING or native.RecordsBuffer is None:
    RecordBatchBuilder = PyRecordBatchBuilder
else:

    class RecordBatchBuilder(_Builder, native.RecordsBuffer):
        """Accumulates records for one partition and builds a magic v2 batch."""

        __slots__ = _BUILDER_SLOTS


def _length_and_bytes(data: bytes | None) -> tuple[bytes, bytes]:
    """A record's key or value as its varint length (-1: null) and its bytes (none: null)."""
    if data is None:
        return _NULL, b""
    n = len(data)
    return (VARINT_CACHE[n + 1] if n < VARINT_CACHE_LIMIT else varint_bytes(n)), data


def _encode_headers(headers: Sequence[Header]) -> bytes:
    vb = varint_bytes
    if not isinstance(headers, list | tuple):
        headers = list(headers)
    parts = [vb(len(headers))]
    for i, pair in enumerate(headers):
        if not isinstance(pair, tuple | list) or len(pair) != 2:  # as the C twin
            raise TypeError(f"header {i} must be a (str, bytes | None) pair")
        key, value = pair
        if not isinstance(key, str):
            raise TypeError(f"header {i} key must be a str, not {type(key).__name__}")
        k = key.encode("utf-8")
        parts.append(vb(len(k)))
        parts.append(k)
        if value is None:
            parts.append(_NULL)
        else:
            parts.append(vb(len(value)))
            parts.append(value)
    return b"".join(parts)


def restamp(
    batch: bytes | bytearray,
    *,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    partition_leader_epoch: int | None = None,
    is_transactional: bool | None = None,
    base_offset: int | None = None,
) -> bytes:
    """Patch header fields of a built v2 batch and recompute its CRC; records untouched."""
    if len(batch) < HEADER_SIZE or batch[16] != 2:
        raise DecodeError("restamp needs a magic v2 record batch")
    out = bytearray(batch)
    fields = list(HEADER_STRUCT.unpack_from(out))
    if base_offset is not None:
        fields[0] = base_offset
    if partition_leader_epoch is not None:
        fields[2] = partition_leader_epoch
    if is_transactional is not None:
        fields[5] = fields[5] | TRANSACTIONAL_BIT if is_transactional else (fields[5] & ~TRANSACTIONAL_BIT)
    fields[9], fields[10], fields[11] = producer_id, producer_epoch, base_sequence
    HEADER_STRUCT.pack_into(out, 0, *fields)
    struct.pack_into(">I", out, CRC_OFFSET, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


def build_control_batch(
    control_type: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp_ms: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transaction marker batch (ABORT/COMMIT), as a coordinator writes one."""
    builder = RecordBatchBuilder(
        is_transactional=True,
        is_control=True,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
    )
    builder.append(
        timestamp_ms,
        _CONTROL_KEY.pack(0, int(control_type)),
        _CONTROL_VALUE.pack(0, coordinator_epoch),
    )
    return builder.build(producer_id, producer_epoch, -1)


class CompressionRatioEstimator:
    """Per (topic, codec) compression ratio, updated like Java's CompressionRatioEstimator.

    A worse ratio than estimated is adopted at once (or +0.05), a better one slowly (-0.005),
    so batches rarely overflow ``batch_size`` after compression.
    """

    DETERIORATE_STEP = 0.05
    IMPROVING_STEP = 0.005

    def __init__(self) -> None:
        self._ratios: dict[tuple[str, int], float] = {}

    def estimate(self, topic: str, compression_type: int) -> float:
        return self._ratios.get((topic, compression_type), 1.0)

    def update(self, topic: str, compression_type: int, observed_ratio: float) -> float:
        current = self.estimate(topic, compression_type)
        if observed_ratio > current:
            current = max(current + self.DETERIORATE_STEP, observed_ratio)
        elif observed_ratio < current:
            current = max(current - self.IMPROVING_STEP, observed_ratio)
        self._ratios[(topic, compression_type)] = current
        return current
