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
from aiokafka_lead.records.legacy import LegacyRecordBatch
from aiokafka_lead.records.span import PartitionBytes

__all__ = ["AnyRecordBatch", "MemoryRecords"]

AnyRecordBatch = RecordBatch | LegacyRecordBatch

_LENGTH = struct.Struct(">qi")
_MAGIC_OFFSET = 16
_LAST_DELTA = struct.Struct(">i")
_LAST_DELTA_OFFSET = 23  # v2: baseOffset, batchLength, leaderEpoch, magic, crc, attributes


class MemoryRecords(PartitionBytes):
    """The ``records`` bytes of one partition; iterate for batches."""

    __slots__ = ()

    def __len__(self) -> int:
        return len(self._buf)

    def _framed(self) -> Iterator[tuple[int, int, int]]:
        """``(position, base offset, magic)`` of each complete batch, its framing checked: a
        negative length, a v2 batch shorter than its header or an unknown magic raises; a
        partial trailing batch ends the iteration."""
        buf = self._buf
        end = len(buf)
        pos = 0
        while end - pos >= LOG_OVERHEAD:
            base_offset, length = _LENGTH.unpack_from(buf, pos)
            if length < 0:
                raise self._error(f"negative batch length {length}", base_offset)
            batch_end = pos + LOG_OVERHEAD + length
            if batch_end > end or end - pos <= _MAGIC_OFFSET:
                return  # partial trailing batch
            magic = buf[pos + _MAGIC_OFFSET]
            if magic == 2 and length < HEADER_SIZE - LOG_OVERHEAD:
                raise self._error(f"record batch length {length} below the header size", base_offset)
            if magic not in (0, 1, 2):
                raise self._error(f"unknown record batch magic {magic}", base_offset)
            yield pos, base_offset, magic
            pos = batch_end

    def _error(self, what: str, base_offset: int) -> DecodeError:
        return DecodeError(f"{what} (topic={self.topic}, partition={self.partition}, offset={base_offset})")

    def __iter__(self) -> Iterator[AnyRecordBatch]:
        buf = self._buf
        topic = self.topic
        partition = self.partition
        limit = self._max_decompressed_size
        for pos, _, magic in self._framed():
            decoder = RecordBatch if magic == 2 else LegacyRecordBatch
            yield decoder(buf, pos, topic=topic, partition=partition, max_decompressed_size=limit)

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
        last = None
        for pos, base_offset, magic in self._framed():
            if magic == 2:
                last = base_offset + _LAST_DELTA.unpack_from(self._buf, pos + _LAST_DELTA_OFFSET)[0]
            else:
                last = base_offset  # a legacy wrapper carries its last inner offset
        return None if last is None else last + 1
