"""Iterate the batches of a fetched ``records`` field, lazily.

A fetch response routinely ends with a partial batch (the broker cuts at max_bytes): that
trailing fragment is skipped quietly. Anything structurally impossible raises
:class:`DecodeError`. Batches of different magic can be mixed in one response (a topic
upgraded in place), so the magic byte (at offset 16 in every format) picks the decoder.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.records.batch import HEADER_SIZE, LOG_OVERHEAD, RecordBatch
from aiokafka_lead.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from aiokafka_lead.records.legacy import LegacyRecordBatch

__all__ = ["AnyRecordBatch", "MemoryRecords"]

AnyRecordBatch = RecordBatch | LegacyRecordBatch

_LENGTH = struct.Struct(">qi")
_MAGIC_OFFSET = 16
_LAST_DELTA = struct.Struct(">i")
_LAST_DELTA_OFFSET = 23  # v2: baseOffset, batchLength, leaderEpoch, magic, crc, attributes


class MemoryRecords:
    """The ``records`` bytes of one partition; iterate for batches."""

    __slots__ = ("_buf", "_max_decompressed_size", "partition", "topic")

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        *,
        topic: str | None = None,
        partition: int | None = None,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> None:
        # One copy of a view: indexing ``bytes`` is much faster in the record loop.
        self._buf = data if isinstance(data, bytes) else bytes(data)
        self.topic = topic
        self.partition = partition
        self._max_decompressed_size = max_decompressed_size

    def __len__(self) -> int:
        return len(self._buf)

    def __iter__(self) -> Iterator[AnyRecordBatch]:
        buf = self._buf
        end = len(buf)
        pos = 0
        topic = self.topic
        partition = self.partition
        limit = self._max_decompressed_size
        while end - pos >= LOG_OVERHEAD:
            base_offset, length = _LENGTH.unpack_from(buf, pos)
            if length < 0:
                raise DecodeError(
                    f"negative batch length {length} "
                    f"(topic={topic}, partition={partition}, offset={base_offset})"
                )
            batch_end = pos + LOG_OVERHEAD + length
            if batch_end > end or end - pos <= _MAGIC_OFFSET:
                return  # partial trailing batch
            magic = buf[pos + _MAGIC_OFFSET]
            batch: AnyRecordBatch
            if magic == 2:
                if length < HEADER_SIZE - LOG_OVERHEAD:
                    raise DecodeError(
                        f"record batch length {length} below the header size "
                        f"(topic={topic}, partition={partition}, offset={base_offset})"
                    )
                batch = RecordBatch(buf, pos, topic=topic, partition=partition, max_decompressed_size=limit)
            elif magic in (0, 1):
                batch = LegacyRecordBatch(
                    buf, pos, topic=topic, partition=partition, max_decompressed_size=limit
                )
            else:
                raise DecodeError(
                    f"unknown record batch magic {magic} "
                    f"(topic={topic}, partition={partition}, offset={base_offset})"
                )
            yield batch
            pos = batch_end

    def batches(self) -> list[AnyRecordBatch]:
        return list(self)

    def has_next(self) -> bool:
        """Whether at least one complete batch is present (cheap, no decoding)."""
        end = len(self._buf)
        if end < LOG_OVERHEAD:
            return False
        length: int = _LENGTH.unpack_from(self._buf, 0)[1]
        return length >= 0 and LOG_OVERHEAD + length <= end

    def next_offset(self) -> int | None:
        """Offset after the last complete batch, or ``None`` if there is none.

        Reads only the fields it needs from each header (nothing is decoded or checked
        beyond what :meth:`__iter__` checks), so it is cheap even for many small batches.
        """
        buf = self._buf
        end = len(buf)
        pos = 0
        last = None
        while end - pos >= LOG_OVERHEAD:
            base_offset, length = _LENGTH.unpack_from(buf, pos)
            if length < 0:
                raise DecodeError(
                    f"negative batch length {length} "
                    f"(topic={self.topic}, partition={self.partition}, offset={base_offset})"
                )
            batch_end = pos + LOG_OVERHEAD + length
            if batch_end > end or end - pos <= _MAGIC_OFFSET:
                break  # partial trailing batch
            magic = buf[pos + _MAGIC_OFFSET]
            if magic == 2:
                if length < HEADER_SIZE - LOG_OVERHEAD:
                    raise DecodeError(
                        f"record batch length {length} below the header size "
                        f"(topic={self.topic}, partition={self.partition}, offset={base_offset})"
                    )
                last = base_offset + _LAST_DELTA.unpack_from(buf, pos + _LAST_DELTA_OFFSET)[0]
            elif magic in (0, 1):
                last = base_offset  # a legacy wrapper carries its last inner offset
            else:
                raise DecodeError(
                    f"unknown record batch magic {magic} "
                    f"(topic={self.topic}, partition={self.partition}, offset={base_offset})"
                )
            pos = batch_end
        return None if last is None else last + 1
