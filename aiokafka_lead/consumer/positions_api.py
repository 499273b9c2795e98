"""The consumer's positions: seeks, ``position()``, watermarks, and the offset look-ups
(committed offsets, beginning and end offsets, offsets for times)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import anyio

from aiokafka_lead.config.arguments import check_timestamp, check_topic_partition
from aiokafka_lead.consumer.consumer_base import ConsumerBase, only_topic_partitions
from aiokafka_lead.consumer.errors import IllegalOperation, IllegalStateError
from aiokafka_lead.consumer.offsets import EARLIEST, LATEST
from aiokafka_lead.core.client import guarded
from aiokafka_lead.errors import KafkaTimeoutError
from aiokafka_lead.structs import OffsetAndTimestamp, TopicPartition


class PositionsAPI(ConsumerBase):
    """``seek*``, ``position``, ``highwater``, ``committed`` and the offset look-ups of AIOKafkaConsumer."""

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """The next getmany()/getone() starts at ``offset`` (it also answers a pending
        NoOffsetForPartitionError or OffsetOutOfRangeError of that partition)."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError("Offset must be a positive integer")
        self._subs.seek(partition, offset, -1, validated_epoch=self._core.store.leader_epoch(partition))

    def _assigned_targets(self, partitions: tuple[TopicPartition, ...]) -> list[TopicPartition]:
        """seek_to_*'s partitions: TopicPartitions, all assigned (default: the whole assignment)."""
        only_topic_partitions(partitions)
        if not partitions:
            return sorted(self._subs.assigned())
        not_assigned = set(partitions) - self._subs.assigned()
        if not_assigned:
            raise IllegalStateError(f"Partitions {not_assigned} are not assigned")
        return list(partitions)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> bool:
        """Start over at the log start; True once the new positions are known (within the
        request timeout, as aiokafka's: False if not yet, the reset still happens)."""
        return await self._reset_and_wait(self._assigned_targets(partitions), EARLIEST)

    async def seek_to_end(self, *partitions: TopicPartition) -> bool:
        """Jump to the log end; True once the new positions are known (see seek_to_beginning)."""
        return await self._reset_and_wait(self._assigned_targets(partitions), LATEST)

    async def _reset_and_wait(self, tps: list[TopicPartition], spec: int) -> bool:
        for tp in tps:
            self._subs.request_reset(tp, spec)
        if not self._core.host.running:
            return False
        with anyio.move_on_after(self._config.request_timeout_ms / 1000):
            await self._subs.wait_until(lambda: all(self._position_settled(tp) for tp in tps))
            return True
        return False

    @guarded
    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int | None]:
        tps = self._assigned_targets(partitions)  # first, as aiokafka: IllegalStateError
        if self._config.group_id is None:
            raise IllegalOperation("seek_to_committed() needs a group_id")
        committed = await self._positions.committed(tps)
        out: dict[TopicPartition, int | None] = {}
        for tp in tps:
            c = committed.get(tp)
            out[tp] = None if c is None else c.offset
            if c is not None:
                self._subs.seek(tp, c.offset, c.leader_epoch, validated_epoch=-1)
        return out

    @guarded
    async def position(self, partition: TopicPartition, timeout_ms: float | None = None) -> int:
        """The offset of the next record for ``partition`` (waits for a reset/lookup to finish)."""
        self._require_started()
        timeout = (self._config.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        try:

            def ready() -> bool:
                st = self._subs.state(partition)
                if st.has_valid_position and not self._positions.busy(partition):
                    return True
                self._raise_pending()
                return False

            with anyio.fail_after(timeout):
                # positions, busy marks and reported errors all notify the subscription
                await self._subs.wait_until(ready)
            position = self._subs.state(partition).position
            assert position is not None
            return position
        except TimeoutError:
            unknown = self._core.store.partitions_for_topic(partition.topic) is None
            why = f" (topic {partition.topic!r} is not in the cluster's metadata)" if unknown else ""
            message = f"no position for {partition} within {timeout * 1000:.0f} ms{why}"
            raise KafkaTimeoutError(message) from None

    def highwater(self, partition: TopicPartition) -> int | None:
        """The highest high watermark the fetcher has seen (never goes back, KIP-207)."""
        return self._subs.state(partition).highwater

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        return self._subs.state(partition).last_stable_offset

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """When the last fetch answer for ``partition`` came (ms since the epoch; None: none yet)."""
        return self._subs.state(partition).last_fetch_ms

    def _position_settled(self, tp: TopicPartition) -> bool:
        """A starting position is known, or the user must give one (auto_offset_reset="none")."""
        st = self._subs.get(tp)
        if st is None or st.error is not None:
            return True
        return st.has_valid_position and not self._positions.busy(tp)

    # ----------------------------------------------------------------- offsets
    @guarded
    async def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset for ``partition`` (None if there is none)."""
        if self._config.group_id is None:
            raise IllegalOperation("committed() needs a group_id")
        self._require_started()
        c = (await self._positions.committed([partition])).get(partition)
        return None if c is None else c.offset

    async def _list(self, specs: Mapping[TopicPartition, int]) -> dict[TopicPartition, Any]:
        self._require_started()
        self._subs.extra_topics.update(tp.topic for tp in specs)
        return await self._lookup.list_offsets(specs, self._config.isolation_level)

    @guarded
    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        result = await self._list(dict.fromkeys(partitions, EARLIEST))
        return {tp: info.offset for tp, info in result.items()}

    @guarded
    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Latest offsets; never lower than one this consumer returned before (KIP-207)."""
        result = await self._list(dict.fromkeys(partitions, LATEST))
        floor = self._subs.end_offset_floor
        out = {}
        for tp, info in result.items():
            value = max(info.offset, floor.get(tp, -1))
            floor[tp] = value
            out[tp] = value
        return out

    @guarded
    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        for tp, ts in timestamps.items():
            check_topic_partition(tp)
            if isinstance(ts, int) and not isinstance(ts, bool) and ts < 0:
                raise ValueError(f"timestamp for {tp} must be >= 0")  # aiokafka's error
            check_timestamp(ts)
        result = await self._list(dict(timestamps))
        return {
            tp: None
            if info.offset < 0
            else OffsetAndTimestamp(info.offset, info.timestamp, info.leader_epoch)
            for tp, info in result.items()
        }


__all__ = ["PositionsAPI"]
