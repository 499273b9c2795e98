"""Kafka record batches, sans-I/O: bytes in, objects out (no sockets, no event loop).

Write path: :class:`RecordBatchBuilder` (magic v2 only). Read path: :class:`MemoryRecords`
yields :class:`RecordBatch` (v2) or :class:`LegacyRecordBatch` (v0/v1) lazily; each gives
:class:`Record` objects from ``records()``.

Error contract: decoders raise only :class:`~aiokafka_lead.errors.DecodeError` (malformed
bytes), :class:`~aiokafka_lead.errors.CorruptRecordError` (CRC mismatch, decompression bomb)
or :class:`~aiokafka_lead.errors.UnsupportedCodecError` (codec library not installed);
anything else is a bug.

Choices worth knowing:

* ``RecordBatch.records()`` decodes the whole batch into a list in one tight loop (and
  decompresses only then); a list is cheaper than a generator per record and lets the batch
  be checked to its last byte before any record is handed out.
* Drain-time stamping: ``RecordBatchBuilder.build(producer_id, producer_epoch,
  base_sequence, partition_leader_epoch=..., is_transactional=...)`` compresses once and
  only re-packs the header and CRC on later calls (retries); ``restamp()`` patches bytes.
* Reading from a ``memoryview`` copies it once into ``bytes``: indexing ``bytes`` is what
  makes the per-record loop fast.
"""

from aiokafka_lead.records.batch import (
    HEADER_SIZE,
    ControlRecordType,
    Header,
    Record,
    RecordBatch,
    TimestampType,
    parse_control_record_key,
)
from aiokafka_lead.records.builder import (
    CompressionRatioEstimator,
    RecordBatchBuilder,
    build_control_batch,
    restamp,
)
from aiokafka_lead.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    CompressionType,
    compress,
    decompress,
)
from aiokafka_lead.records.legacy import LegacyRecordBatch
from aiokafka_lead.records.memory import AnyRecordBatch, MemoryRecords

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "HEADER_SIZE",
    "AnyRecordBatch",
    "CompressionRatioEstimator",
    "CompressionType",
    "ControlRecordType",
    "Header",
    "LegacyRecordBatch",
    "MemoryRecords",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "TimestampType",
    "build_control_batch",
    "compress",
    "decompress",
    "parse_control_record_key",
    "restamp",
]
