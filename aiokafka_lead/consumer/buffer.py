"""Fetched bytes of one partition, decoded batch by batch as the user drains them.

The fetcher keeps the raw ``records`` bytes of a response; nothing is decoded until
``getmany``/``getone`` asks for records, and then only one batch at a time, so a consumer
far behind pays memory for bytes, not for Python objects.

read_committed (KIP-98): the response lists the aborted transactions overlapping the
fetched range as (producer_id, first_offset). Walking batches in offset order, a
transaction becomes "open and aborted" once its first offset is reached; its data
batches are skipped until its ABORT control marker closes it. Control batches are never
handed to the user, but the position moves past them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence

from aiokafka_lead.records import ControlRecordType, MemoryRecords, Record, RecordBatch
from aiokafka_lead.records.memory import AnyRecordBatch
from aiokafka_lead.structs import TopicPartition

#: what the drain hands out: (record, timestamp_type, leader epoch of its batch)
Drained = tuple[Record, int, int]
#: the same per batch slice: (records, timestamp_type, leader epoch of their batch)
Chunk = tuple[list[Record], int, int]


class PartitionRecords:
    """One partition's slice of one Fetch response."""

    __slots__ = (
        "_aborted",
        "_aborted_pids",
        "_batch_epoch",
        "_batches",
        "_check_crcs",
        "_index",
        "_pending_next",
        "_read_committed",
        "_records",
        "_ts_type",
        "exhausted",
        "generation",
        "next_epoch",
        "next_offset",
        "size",
        "tp",
    )

    def __init__(
        self,
        tp: TopicPartition,
        data: bytes,
        *,
        fetch_offset: int,
        generation: int,
        aborted: Sequence[tuple[int, int]] | None = None,
        read_committed: bool = False,
        check_crcs: bool = True,
    ) -> None:
        self.tp = tp
        self.size = len(data)
        self.generation = generation
        #: the position after what was drained so far
        self.next_offset = fetch_offset
        self.next_epoch = -1
        self.exhausted = False
        self._batches: Iterator[AnyRecordBatch] = iter(
            MemoryRecords(data, topic=tp.topic, partition=tp.partition)
        )
        self._records: list[Record] = []
        self._index = 0
        self._ts_type = 0
        self._batch_epoch = -1
        self._pending_next = fetch_offset
        self._check_crcs = check_crcs
        self._read_committed = read_committed
        # min-heap of (first_offset, producer_id)
        self._aborted: list[tuple[int, int]] = [(first, pid) for pid, first in (aborted or ())]
        heapq.heapify(self._aborted)
        self._aborted_pids: set[int] = set()

    def take(self, max_records: int) -> list[Drained]:
        """Up to ``max_records`` records at or after the position; advances it."""
        chunks = self.take_chunks(max_records)
        return [(rec, ts_type, epoch) for records, ts_type, epoch in chunks for rec in records]

    def take_chunks(self, max_records: int) -> list[Chunk]:
        """Like :meth:`take`, a slice of a batch at a time (no per-record work); advances it."""
        out: list[Chunk] = []
        left = max_records
        while left > 0:
            records = self._records
            i = self._index
            n = len(records)
            if i < n:
                # Offsets grow within a batch: only its head can lie before the position
                # (a fetch from the middle of a batch).
                next_offset = self.next_offset
                while i < n and records[i].offset < next_offset:
                    i += 1
                j = min(n, i + left)
                self._index = j
                if i == j:
                    continue
                chunk = records if i == 0 and j == n else records[i:j]
                out.append((chunk, self._ts_type, self._batch_epoch))
                left -= j - i
                self.next_offset = chunk[-1].offset + 1
                self.next_epoch = self._batch_epoch
                continue
            # the batch is drained: compaction may have left a gap at its end
            if self._pending_next > self.next_offset:
                self.next_offset = self._pending_next
                self.next_epoch = self._batch_epoch
            if not self._next_batch():
                self.exhausted = True
                break
        if not self.exhausted and self._index >= len(self._records):
            # look one batch ahead so a fully drained slice frees its partition for fetching
            if self._pending_next > self.next_offset:
                self.next_offset = self._pending_next
                self.next_epoch = self._batch_epoch
            self.exhausted = not self._next_batch()
        return out

    def _next_batch(self) -> bool:
        """Load the next batch worth handing out; False when none is left."""
        self._records = []
        self._index = 0
        for batch in self._batches:
            if batch.next_offset <= self.next_offset:
                continue
            if self._check_crcs:
                batch.validate_crc()
            epoch = batch.partition_leader_epoch
            if isinstance(batch, RecordBatch) and self._skip(batch):
                self.next_offset = batch.next_offset
                self.next_epoch = epoch
                continue
            self._records = batch.records()
            self._ts_type = int(batch.timestamp_type)
            self._batch_epoch = epoch
            self._pending_next = batch.next_offset
            return True
        return False

    def _skip(self, batch: RecordBatch) -> bool:
        """Control batches always; aborted transactional data under read_committed."""
        if self._read_committed:
            while self._aborted and self._aborted[0][0] <= batch.last_offset:
                _, pid = heapq.heappop(self._aborted)
                self._aborted_pids.add(pid)
        if batch.is_control:
            if self._read_committed and batch.control_type == ControlRecordType.ABORT:
                self._aborted_pids.discard(batch.producer_id)
            return True
        return self._read_committed and batch.is_transactional and batch.producer_id in self._aborted_pids
