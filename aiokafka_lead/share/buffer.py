"""The share consumer's record buffer: acquired records per node until a poll takes them.

Records are kept as the batches' record lists (``acks.Chunk``), so taking them costs per
batch: a poll takes whole lists, and cuts at most one. A node is not fetched from again
while it has records here (DESIGN.md invariant 32).
"""

from __future__ import annotations

from collections import deque

import anyio

from aiokafka_lead.share.acks import Chunk


class ShareBuffer:
    """Acquired records by node, in the order acquired."""

    def __init__(self) -> None:
        self._chunks: dict[int, deque[Chunk]] = {}
        #: per node, how many records of its first list were taken already
        self._taken: dict[int, int] = {}
        self._count = 0
        #: set while records are buffered (polls wait on it; set also to wake them otherwise)
        self.data = anyio.Event()

    def __len__(self) -> int:
        return self._count

    def holds(self, node_id: int) -> bool:
        return bool(self._chunks.get(node_id))

    def add(self, node_id: int, chunks: list[Chunk], count: int) -> None:
        if count:
            self._chunks.setdefault(node_id, deque()).extend(chunks)
            self._count += count
            self.data.set()

    def take(self, max_records: int) -> list[Chunk]:
        """Up to ``max_records`` buffered records, node by node, in the order acquired: whole
        lists where they fit, else a slice (the rest of a list is never copied)."""
        out: list[Chunk] = []
        left = max_records
        for node_id, chunks in self._chunks.items():
            start = self._taken.get(node_id, 0)
            while chunks and left > 0:
                chunk = chunks[0]
                end = start + left
                if end >= len(chunk):
                    out.append(chunk if start == 0 else chunk[start:])
                    left -= len(chunk) - start
                    chunks.popleft()
                    start = 0
                else:
                    out.append(chunk[start:end])
                    start = end
                    left = 0
            self._taken[node_id] = start
            if left == 0:
                break
        self._count -= max_records - left
        if not self._count:
            self.data = anyio.Event()
        return out

    def take_all(self) -> list[Chunk]:
        """Every buffered record (closing: they go back to the group)."""
        out = [
            chunk[self._taken.get(node_id, 0) :] if i == 0 else chunk
            for node_id, chunks in self._chunks.items()
            for i, chunk in enumerate(chunks)
        ]
        self._chunks.clear()
        self._taken.clear()
        self._count = 0
        return [chunk for chunk in out if chunk]


__all__ = ["ShareBuffer"]
