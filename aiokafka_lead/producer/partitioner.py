"""Partitioners: keyed records by murmur2 (same partition as the Java client), keyless
records by the sticky partitioner (KIP-480).

aiokafka's partitioner signature is kept: ``partitioner(key_bytes, all_partitions,
available_partitions) -> int``. The default partitioner additionally learns from the
accumulator when a partition's batch is closed, which is when KIP-480 moves keyless
records to another partition.
"""

from __future__ import annotations

import array
import random
from collections.abc import Callable, Sequence
from typing import Protocol

from aiokafka_lead.records import native
from aiokafka_lead.records.builder import ArrowBinary, ArrowRows

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def py_murmur2(data: bytes) -> int:
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), as a signed int32.

    The reference for the C extension's ``murmur2`` (:data:`murmur2` is that one when built).
    """
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    end = length & ~3
    for i in range(0, end, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[end + 2] << 16
    if tail >= 2:
        h ^= data[end + 1] << 8
    if tail >= 1:
        h ^= data[end]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


murmur2: Callable[[bytes], int] = native.murmur2 or py_murmur2


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The Java client's choice: ``toPositive(murmur2(key)) % numPartitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


def py_key_partitions(keys: ArrowBinary, rows: int, num_partitions: int) -> bytes:
    """:func:`partition_for_key` of every key of an Arrow binary column (-1 where null), as
    int32s in the machine's byte order: the reference for the C extension's."""
    if rows < 0 or num_partitions < 1:
        raise ValueError(f"rows ({rows}) must be >= 0 and num_partitions ({num_partitions}) >= 1")
    column = ArrowRows(keys, rows, "key")
    out = array.array("i", [-1]) * rows
    for i in range(rows):
        key = column.row(i)
        if key is not None:
            out[i] = partition_for_key(key, num_partitions)
    return out.tobytes()


#: per row of an Arrow key column, the partition of its key (the C extension's when built)
key_partitions: Callable[[ArrowBinary, int, int], bytes] = native.key_partitions or py_key_partitions


class Partitioner(Protocol):
    def __call__(
        self, key: bytes | None, all_partitions: Sequence[int], available_partitions: Sequence[int]
    ) -> int: ...


class DefaultPartitioner:
    """murmur2 for keys; KIP-480 sticky choice for keyless records, per topic."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}
        # per topic, the pool the sticky partition was last found in: the same (unchanged)
        # sequence again needs no search, so a keyless record costs O(1), not O(partitions)
        self._checked: dict[str, tuple[int, Sequence[int]]] = {}

    def __call__(
        self, key: bytes | None, all_partitions: Sequence[int], available_partitions: Sequence[int]
    ) -> int:
        if key is not None:  # aiokafka's: an index into all_partitions (sorted by id)
            return all_partitions[partition_for_key(key, len(all_partitions))]
        return self._rng.choice(list(available_partitions or all_partitions))

    def partition(
        self,
        topic: str,
        key: bytes | None,
        all_partitions: Sequence[int],
        available_partitions: Sequence[int],
    ) -> int:
        """The partition of a record of ``topic``. A caller passes new sequences when the
        topic's partitions change (the producer's topic view does), never the same one
        changed in place."""
        if key is not None:
            return partition_for_key(key, len(all_partitions))
        pool = available_partitions or all_partitions
        checked = self._checked.get(topic)
        if checked is not None and checked[1] is pool:
            return checked[0]
        current = self._sticky.get(topic)
        if current is None or current not in pool:
            current = self._sticky[topic] = self._rng.choice(list(pool))
        self._checked[topic] = (current, pool)
        return current

    @property
    def checked_choices(self) -> dict[str, tuple[int, Sequence[int]]]:
        """Per topic, the sticky partition and the pool it was checked against: the C send
        path reads it (the same dict for the partitioner's life)."""
        return self._checked

    @property
    def sticky_choices(self) -> dict[str, int]:
        """Per topic, the partition keyless records go to now (the same dict for the
        partitioner's life: the accumulator reads it to report only these batches' closes)."""
        return self._sticky

    def sticks_to(self, topic: str, partition: int) -> bool:
        """True if keyless records of ``topic`` currently go to ``partition``."""
        return self._sticky.get(topic) == partition

    def batch_closed(self, topic: str, partition: int, available_partitions: Sequence[int]) -> None:
        """KIP-480: once the sticky partition's batch is closed, stick to another one."""
        if self._sticky.get(topic) != partition:
            return
        choice = partition
        if available_partitions:
            # a few random draws find another partition in O(1); the list only if they fail
            for _ in range(4):
                choice = self._rng.choice(available_partitions)
                if choice != partition:
                    break
            else:
                others = [p for p in available_partitions if p != partition]
                choice = self._rng.choice(others) if others else partition
        self._sticky[topic] = choice
        self._checked.pop(topic, None)  # the next record checks its pool again
