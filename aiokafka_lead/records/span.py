"""What the batch readers share: the fetched bytes of one partition (``PartitionBytes``, the
base of ``MemoryRecords``) and one batch within them (``BatchSpan``, the base of the v2
``RecordBatch`` and the legacy ``LegacyRecordBatch``)."""

from __future__ import annotations

from collections.abc import Iterator

from aiokafka_lead.errors import CorruptRecordError
from aiokafka_lead.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from aiokafka_lead.records.record import Record

__all__ = ["BatchSpan", "PartitionBytes"]


class PartitionBytes:
    """Bytes fetched from ``topic`` / ``partition`` (named in their errors), whose records
    are decompressed up to ``max_decompressed_size`` bytes."""

    __slots__ = ("_buf", "_max_decompressed_size", "partition", "topic")

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        *,
        topic: str | None = None,
        partition: int | None = None,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> None:
        # One copy of a view: indexing ``bytes`` is much faster in the record loop, and
        # records are sliced out of it: they must come out as bytes.
        self._buf = data if isinstance(data, bytes) else bytes(data)
        self.topic = topic
        self.partition = partition
        self._max_decompressed_size = max_decompressed_size


class BatchSpan(PartitionBytes):
    """One batch, ``buf[start:end]``: the subclass's ``_read_header`` reads and checks the
    batch's header at ``start`` and returns ``end``."""

    __slots__ = ("_end", "_start")

    last_offset: int

    def __init__(
        self,
        buf: bytes | bytearray | memoryview,
        start: int = 0,
        *,
        topic: str | None = None,
        partition: int | None = None,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> None:
        super().__init__(buf, topic=topic, partition=partition, max_decompressed_size=max_decompressed_size)
        self._start = start
        self._end = self._read_header()

    def _read_header(self) -> int:
        raise NotImplementedError

    def _error_offset(self) -> int:
        """The offset errors name the batch by."""
        raise NotImplementedError

    def _where(self) -> str:
        return f" (topic={self.topic}, partition={self.partition}, offset={self._error_offset()})"

    def _corrupt(self, message: str) -> CorruptRecordError:
        return CorruptRecordError(
            message, topic=self.topic, partition=self.partition, offset=self._error_offset()
        )

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def size_in_bytes(self) -> int:
        return self._end - self._start

    def raw(self) -> bytes:
        """The batch's bytes exactly as received (e.g. to forward or re-validate)."""
        return self._buf[self._start : self._end]

    def records(self) -> list[Record]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())
