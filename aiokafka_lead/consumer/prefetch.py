"""The prefetch buffer: every partition's fetched records until the user takes them.

One :class:`~aiokafka_lead.consumer.buffer.PartitionRecords` per partition at most (the
fetcher fetches a partition again only once it is drained), and the bytes they hold, which
the fetcher keeps under ``fetch_max_bytes``. Records that no longer follow their partition's
position (a seek or reset since the fetch, or the partition is gone) are dropped, never
handed out. Draining takes a batch slice at a time, round-robin over the partitions, and
advances their positions.
"""

from __future__ import annotations

from collections.abc import Callable

from aiokafka_lead.consumer.buffer import Chunk, PartitionRecords
from aiokafka_lead.consumer.subscription import PartitionState, SubscriptionState
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.structs import TopicPartition


class PrefetchBuffer:
    """Fetched records per partition, their size, and the drain the user's polls call."""

    def __init__(self, subscriptions: SubscriptionState, *, freed: Callable[[], None]) -> None:
        self._subs = subscriptions
        #: called when records leave the buffer (the fetcher may fetch again)
        self._freed = freed
        self._records: dict[TopicPartition, PartitionRecords] = {}
        self.bytes = 0
        #: the most bytes it ever held (for tests and metrics)
        self.max_bytes = 0
        self._drain_start = 0

    def __contains__(self, tp: TopicPartition) -> bool:
        return tp in self._records

    def add(self, records: PartitionRecords) -> None:
        self._records[records.tp] = records
        self.bytes += records.size
        self.max_bytes = max(self.max_bytes, self.bytes)

    def holds(self, tp: TopicPartition, st: PartitionState) -> bool:
        """Whether ``tp`` has records waiting that still follow its position (stale ones go now)."""
        buffered = self._records.get(tp)
        if buffered is not None and _stale(st, buffered):
            self.discard(tp)
            return False
        return buffered is not None

    def has_data(self, partitions: set[TopicPartition] | None = None) -> bool:
        return any(partitions is None or tp in partitions for tp in self._records)

    def drain(
        self, max_records: int, partitions: set[TopicPartition] | None = None
    ) -> dict[TopicPartition, list[Chunk]]:
        """Hand out buffered records, a batch slice at a time (round-robin over partitions);
        positions advance."""
        out: dict[TopicPartition, list[Chunk]] = {}
        keys = list(self._records)
        if not keys:
            return out
        start = self._drain_start % len(keys)
        self._drain_start += 1
        budget = max_records
        freed = False
        for tp in keys[start:] + keys[:start]:
            if budget <= 0:
                break
            if partitions is not None and tp not in partitions:
                continue
            pr = self._records[tp]
            st = self._subs.get(tp)
            if st is None or _stale(st, pr):
                self.discard(tp)
                freed = True
                continue
            if st.paused:
                continue
            try:
                got = pr.take_chunks(budget)
            except KafkaError:
                self.discard(tp)
                self._freed()
                raise
            self._subs.advance(tp, pr.next_offset, pr.next_epoch)
            if got:
                out[tp] = got
                budget -= sum(len(records) for records, _, _ in got)
            if pr.exhausted:
                self.discard(tp)
                freed = True
        if freed:
            self._freed()
        return out

    def discard(self, tp: TopicPartition) -> None:
        pr = self._records.pop(tp, None)
        if pr is not None:
            self.bytes -= pr.size

    def discard_unassigned(self) -> None:
        for tp in [tp for tp in self._records if not self._subs.is_assigned(tp)]:
            self.discard(tp)


def _stale(st: PartitionState, buffered: PartitionRecords) -> bool:
    """Buffered records that no longer follow the partition's position (seek, reset)."""
    return (
        st.generation != buffered.generation
        or st.position != buffered.next_offset
        or st.reset_to is not None
    )


__all__ = ["PrefetchBuffer"]
