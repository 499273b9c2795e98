"""One partition of the fake cluster: an in-memory log, leader epochs and producer state.

Everything here is synchronous (no awaits), so a handler sees a consistent partition
without locks. Batches are stored exactly as produced, with only the fields a broker
rewrites patched in: the base offset and the partition leader epoch, both outside the
CRC32C coverage (KIP-98), so the bytes a consumer fetches are the producer's bytes.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field

from aiokafka_lead.records import ControlRecordType, MemoryRecords, RecordBatch, build_control_batch

_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")
_LEADER_EPOCH_POS = 12
#: Kafka keeps the metadata of the last five batches per producer to spot retries
PRODUCER_BATCH_CACHE = 5
INT32_MAX = 2**31 - 1


@dataclass(slots=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


@dataclass(slots=True)
class ProducerState:
    """Per producer id: its epoch and the sequence ranges of its last five batches."""

    producer_epoch: int
    #: (first_seq, last_seq, base_offset) of recent batches, oldest first
    batches: deque[tuple[int, int, int]] = field(
        default_factory=lambda: deque(maxlen=PRODUCER_BATCH_CACHE)
    )

    @property
    def last_seq(self) -> int:
        return self.batches[-1][1] if self.batches else -1


class SequenceError(Exception):
    """A produce batch rejected by the idempotence checks; carries the Kafka error code."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class Partition:
    """Log, high watermark, leadership and epoch history of one topic partition."""

    def __init__(self, topic: str, index: int, replicas: list[int], leader_id: int) -> None:
        self.topic = topic
        self.index = index
        self.replicas = replicas
        self.leader_id = leader_id
        self.leader_epoch = 0
        #: (epoch, start_offset) in ascending order: what OffsetForLeaderEpoch answers from
        self.epoch_history: list[tuple[int, int]] = [(0, 0)]
        self.batches: list[StoredBatch] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.producers: dict[int, ProducerState] = {}
        #: how stale leaders answer after the last move (see FakeCluster.move_leader)
        self.hint = "current"
        #: the epoch clients knew before the last move (for the "stale"/"same_epoch" hints)
        self.previous_epoch = 0
        #: producer id -> first offset of its open transaction here (what holds the LSO back)
        self.open_txns: dict[int, int] = {}
        #: (producer id, first offset, marker offset) of every aborted transaction (KIP-98 index)
        self.aborted_txns: list[tuple[int, int, int]] = []
        #: KIP-392: follower -> its log end offset, for a follower that lags the leader
        #: (it serves reads only below it; a fetch beyond it is OFFSET_OUT_OF_RANGE there)
        self.replica_log_end: dict[int, int] = {}

    @property
    def high_watermark(self) -> int:
        """Every replica is in sync in the fake, so the high watermark is the log end."""
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """Below the first offset of every open transaction (KIP-98)."""
        return min(self.open_txns.values(), default=self.log_end_offset)

    def aborted_between(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of aborted transactions overlapping [start, end)."""
        return [(pid, first) for pid, first, last in self.aborted_txns if first < end and last >= start]

    def write_marker(self, producer_id: int, producer_epoch: int, *, commit: bool, timestamp_ms: int) -> None:
        """Append a COMMIT/ABORT control batch closing ``producer_id``'s open transaction."""
        base = self.log_end_offset
        data = build_control_batch(
            ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            timestamp_ms=timestamp_ms,
            base_offset=base,
            partition_leader_epoch=self.leader_epoch,
        )
        self.batches.append(StoredBatch(base, base, timestamp_ms, data))
        self.log_end_offset = base + 1
        first = self.open_txns.pop(producer_id, None)
        if not commit and first is not None:
            self.aborted_txns.append((producer_id, first, base))
        state = self.producers.get(producer_id)
        if state is None or state.producer_epoch != producer_epoch:
            self.producers[producer_id] = ProducerState(producer_epoch)  # a bumped epoch restarts sequences

    # ----------------------------------------------------------------- leadership
    def elect(self, leader_id: int) -> None:
        """A new leader at the next epoch, starting at the current log end offset."""
        self.previous_epoch = self.leader_epoch
        self.leader_id = leader_id
        self.leader_epoch += 1
        self.epoch_history.append((self.leader_epoch, self.log_end_offset))

    def end_offset_for_epoch(self, requested: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, following Java's LeaderEpochFileCache."""
        if requested < 0:
            return -1, -1
        history = self.epoch_history
        if history and history[-1][0] == requested:
            return requested, self.log_end_offset
        higher = next((entry for entry in history if entry[0] > requested), None)
        if higher is None:
            return -1, -1
        floor = None
        for entry in history:
            if entry[0] <= requested:
                floor = entry
        if floor is None:
            return requested, higher[1]
        return floor[0], higher[1]

    # ---------------------------------------------------------------------- writes
    def append(self, records: bytes) -> tuple[int, int]:
        """Append produced record batches; (base offset, error code 0) or SequenceError.

        Duplicates of one of a producer's last five batches return the original base
        offset without appending, as Java brokers do for DUPLICATE_SEQUENCE_NUMBER.
        """
        batches = [b for b in MemoryRecords(records) if isinstance(b, RecordBatch)]
        if not batches:
            raise SequenceError(87, "no v2 record batch in the produce request")
        for batch in batches:
            batch.validate_crc()
        first = batches[0]
        duplicate = self._check_sequence(first, len(batches))
        if duplicate is not None:
            return duplicate, 0
        base = self.log_end_offset
        for batch in batches:
            self._store(batch)
        return base, 0

    def _check_sequence(self, batch: RecordBatch, count: int) -> int | None:
        if batch.producer_id < 0:
            return None
        if count != 1:
            raise SequenceError(87, "idempotent produce must carry exactly one batch")
        state = self.producers.get(batch.producer_id)
        first_seq = batch.base_sequence
        last_seq = (first_seq + batch.last_offset_delta) % (INT32_MAX + 1)
        if state is None:
            return None  # a producer new to this partition may start at any sequence
        if batch.producer_epoch < state.producer_epoch:
            raise SequenceError(47, f"producer epoch {batch.producer_epoch} is fenced")
        if batch.producer_epoch > state.producer_epoch:
            if first_seq != 0:
                raise SequenceError(45, f"new epoch must start at sequence 0, not {first_seq}")
            return None
        for cached_first, cached_last, base_offset in state.batches:
            if (cached_first, cached_last) == (first_seq, last_seq):
                return base_offset
        expected = 0 if state.last_seq == INT32_MAX else state.last_seq + 1
        if state.batches and first_seq != expected:
            raise SequenceError(
                45, f"out of order sequence {first_seq} (expected {expected})"
            )
        return None

    def _store(self, batch: RecordBatch) -> None:
        base = self.log_end_offset
        data = bytearray(batch.raw())
        _BASE_OFFSET.pack_into(data, 0, base)
        _LEADER_EPOCH.pack_into(data, _LEADER_EPOCH_POS, self.leader_epoch)
        last = base + batch.last_offset_delta
        self.batches.append(StoredBatch(base, last, batch.max_timestamp, bytes(data)))
        self.log_end_offset = last + 1
        if batch.producer_id >= 0:
            state = self.producers.get(batch.producer_id)
            if state is None or state.producer_epoch != batch.producer_epoch:
                state = ProducerState(batch.producer_epoch)
                self.producers[batch.producer_id] = state
            last_seq = (batch.base_sequence + batch.last_offset_delta) % (INT32_MAX + 1)
            state.batches.append((batch.base_sequence, last_seq, base))
            if batch.is_transactional:
                self.open_txns.setdefault(batch.producer_id, base)

    def truncate(self, offset: int) -> None:
        """Drop every batch that reaches ``offset`` or beyond (KIP-320 divergence setups).

        Epoch history entries starting at or after the new log end are dropped, and the
        current leader epoch is re-anchored at the new end, like a leader elected uncleanly.
        """
        self.batches = [b for b in self.batches if b.last_offset < offset]
        self.log_end_offset = self.batches[-1].last_offset + 1 if self.batches else (
            self.log_start_offset
        )
        end = self.log_end_offset
        self.epoch_history = [e for e in self.epoch_history if e[1] < end or e == (0, 0)]
        if self.epoch_history[-1][0] != self.leader_epoch:
            self.epoch_history.append((self.leader_epoch, end))
        for state in self.producers.values():
            while state.batches and state.batches[-1][2] >= end:
                state.batches.pop()

    # ----------------------------------------------------------------------- reads
    def read(
        self, fetch_offset: int, max_bytes: int, *, at_least_one: bool, below: int | None = None
    ) -> bytes:
        """Whole batches from the one holding ``fetch_offset``, up to ``max_bytes`` (and,
        for read_committed, only batches that start below the last stable offset)."""
        out: list[bytes] = []
        size = 0
        for stored in self.batches:
            if stored.last_offset < fetch_offset:
                continue
            if below is not None and stored.base_offset >= below:
                break
            n = len(stored.data)
            if size + n > max_bytes and (out or not at_least_one):
                break
            out.append(stored.data)
            size += n
        return b"".join(out)

    def records(self) -> list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
        """(offset, key, value, headers) of every record, decoded from the stored bytes."""
        out: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = []
        for stored in self.batches:
            for batch in MemoryRecords(stored.data):
                for rec in batch.records():
                    out.append((rec.offset, rec.key, rec.value, list(rec.headers)))
        return out

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int]:
        """(offset, timestamp) of the first record at or after ``timestamp``, else (-1, -1)."""
        for stored in self.batches:
            if stored.max_timestamp < timestamp:
                continue
            for batch in MemoryRecords(stored.data):
                for rec in batch.records():
                    if rec.timestamp >= timestamp:
                        return rec.offset, rec.timestamp
        return -1, -1

    def max_timestamp_offset(self) -> tuple[int, int]:
        """(offset, timestamp) of the record with the largest timestamp (first on ties)."""
        best = (-1, -1)
        for stored in self.batches:
            for batch in MemoryRecords(stored.data):
                for rec in batch.records():
                    if rec.timestamp > best[1]:
                        best = (rec.offset, rec.timestamp)
        return best

    def epoch_at(self, offset: int) -> int:
        """The leader epoch that covers ``offset`` (per the epoch history)."""
        epoch = -1
        for e, start in self.epoch_history:
            if start <= offset:
                epoch = e
        return epoch
