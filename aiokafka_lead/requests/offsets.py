"""Offset look-ups (ListOffsets, KIP-207).

KIP-207: brokers answering ListOffsets v5+ say OFFSET_NOT_AVAILABLE (78) while a newly
elected leader's high watermark is not yet established, instead of LEADER_NOT_AVAILABLE;
that error is retried after backoff WITHOUT a metadata refresh (the leader is right, it
just is not ready). NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, FENCED_LEADER_EPOCH and
UNKNOWN_LEADER_EPOCH mean our metadata is stale: refresh, then retry. The current leader
epoch is sent (KIP-320) so a stale leader cannot answer. Partitions that succeeded are
kept; only failed ones are asked again, all within the caller's timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aiokafka_lead.core.client import guarded
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaError, error_for_code
from aiokafka_lead.protocol.messages import ListOffsetsRequest
from aiokafka_lead.requests.base import RequestBase, pick_retry_error, raise_item_errors
from aiokafka_lead.structs import TopicPartition

ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}


@dataclass(frozen=True, slots=True)
class ListOffsetsResultInfo:
    """One partition's answer: the offset (-1: no record at or after the timestamp), the
    record's timestamp and the leader epoch it was written in."""

    offset: int
    timestamp: int
    leader_epoch: int


class OffsetsRequests(RequestBase):
    """ListOffsets."""

    @guarded
    async def list_offsets(
        self,
        topic_partitions: Mapping[TopicPartition, int],
        isolation_level: str = "read_uncommitted",
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """Offsets per partition for an OffsetSpec (EARLIEST, LATEST, MAX_TIMESTAMP) or a timestamp.

        For a timestamp with no later record the result's offset is -1 (as in Java).
        """
        if isolation_level not in ISOLATION_LEVELS:
            raise ValueError(f"isolation_level must be one of {sorted(ISOLATION_LEVELS)}")
        isolation = ISOLATION_LEVELS[isolation_level]
        wanted = dict(topic_partitions)
        results: dict[TopicPartition, ListOffsetsResultInfo] = {}

        async def attempt() -> dict[TopicPartition, ListOffsetsResultInfo]:
            pending = [tp for tp in wanted if tp not in results]
            errors: list[KafkaError] = []
            for node_id, tps in self._group_by_leader(pending).items():
                errors.extend(await self._list_offsets_from(node_id, tps, wanted, isolation, results))
            if len(results) < len(wanted):
                if not errors:  # some leaders unknown
                    self._core.store.request_refresh("list_offsets: leader unknown")
                    raise error_for_code(ErrorCode.LEADER_NOT_AVAILABLE, "ListOffsets: leader unknown")
                raise pick_retry_error(errors)
            return dict(results)

        return await self._retrying("list_offsets", attempt, timeout_ms)

    async def _list_offsets_from(
        self,
        node_id: int,
        tps: list[TopicPartition],
        wanted: Mapping[TopicPartition, int],
        isolation: int,
        results: dict[TopicPartition, ListOffsetsResultInfo],
    ) -> list[KafkaError]:
        """One ListOffsets request to one leader; fills ``results``, returns retriable errors."""
        store = self._core.store
        topics: dict[str, list[ListOffsetsRequest.ListOffsetsPartition]] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(
                ListOffsetsRequest.ListOffsetsPartition(
                    partition_index=tp.partition,
                    current_leader_epoch=store.leader_epoch(tp),
                    timestamp=wanted[tp],
                )
            )
        request = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=isolation,
            topics=[ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()],
            timeout_ms=self._request_timeout_ms,
        )
        try:
            response = await self._core.send(node_id, request)
        except KafkaError as exc:
            if not exc.retriable:
                raise
            return [exc]
        errors: list[KafkaError] = []
        fatal: list[tuple[str, int, str | None]] = []
        topics_asked = set(tps)
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if tp not in topics_asked:
                    continue  # not asked for: a confused broker's extra, nothing to apply it to
                if p.error_code == ErrorCode.NONE:
                    results[tp] = ListOffsetsResultInfo(p.offset, p.timestamp, p.leader_epoch)
                    continue
                where = f"ListOffsets {tp.topic}-{tp.partition} from node {node_id}"
                err = error_for_code(p.error_code, where)
                if err.retriable:
                    errors.append(err)
                else:
                    fatal.append((f"{tp.topic}-{tp.partition}", p.error_code, None))
        raise_item_errors("ListOffsets", fatal)
        return errors


__all__ = ["ISOLATION_LEVELS", "ListOffsetsResultInfo", "OffsetsRequests"]
