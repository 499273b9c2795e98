"""Offset look-ups (ListOffsets, KIP-207) and record deletion (DeleteRecords).

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

from aiokafka_lead.admin.base import AdminBase, check_answered, pick_retry_error, raise_item_errors
from aiokafka_lead.admin.types import ListOffsetsResultInfo, RecordsToDelete
from aiokafka_lead.client import guarded
from aiokafka_lead.errors import KafkaError, error_for_code
from aiokafka_lead.protocol.messages import DeleteRecordsRequest, ListOffsetsRequest
from aiokafka_lead.structs import TopicPartition

ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}


class OffsetsMixin(AdminBase):
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
                    raise error_for_code(5, "ListOffsets: leader unknown")
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
                if p.error_code == 0:
                    results[tp] = ListOffsetsResultInfo(p.offset, p.timestamp, p.leader_epoch)
                    continue
                where = f"ListOffsets {tp.topic}-{tp.partition} from node {node_id}"
                err = error_for_code(p.error_code, where)
                if err.retriable:
                    errors.append(err)
                else:
                    fatal.append((f"{tp.topic}-{tp.partition}", p.error_code, None))
        raise_item_errors(f"ListOffsets from node {node_id}", fatal)
        return errors

    @guarded
    async def delete_records(
        self,
        records_to_delete: Mapping[TopicPartition, int | RecordsToDelete],
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, int]:
        """Delete records before each offset (an int or a ``RecordsToDelete``; -1: to the
        high watermark); return the new low watermarks."""
        wanted = {tp: v if isinstance(v, int) else v.before_offset for tp, v in records_to_delete.items()}
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms
        results: dict[TopicPartition, int] = {}

        async def attempt() -> dict[TopicPartition, int]:
            errors: list[KafkaError] = []
            pending = [tp for tp in wanted if tp not in results]
            for node_id, tps in self._group_by_leader(pending).items():
                topics: dict[str, list[DeleteRecordsRequest.DeleteRecordsPartition]] = {}
                for tp in tps:
                    topics.setdefault(tp.topic, []).append(
                        DeleteRecordsRequest.DeleteRecordsPartition(
                            partition_index=tp.partition, offset=wanted[tp]
                        )
                    )
                request = DeleteRecordsRequest(
                    topics=[
                        DeleteRecordsRequest.DeleteRecordsTopic(name=t, partitions=ps)
                        for t, ps in topics.items()
                    ],
                    timeout_ms=timeout,
                )
                response = await self._core.send(node_id, request)
                answered = [
                    TopicPartition(t.name, p.partition_index) for t in response.topics for p in t.partitions
                ]
                check_answered(f"DeleteRecords from node {node_id}", "topics", tps, answered)
                fatal = []
                for t in response.topics:
                    for p in t.partitions:
                        tp = TopicPartition(t.name, p.partition_index)
                        if p.error_code == 0:
                            results[tp] = p.low_watermark
                        elif (err := error_for_code(p.error_code)).retriable:
                            errors.append(err)
                        else:
                            fatal.append((f"{tp.topic}-{tp.partition}", p.error_code, None))
                raise_item_errors("DeleteRecords", fatal)
            if len(results) < len(wanted):
                raise (
                    pick_retry_error(errors) if errors else error_for_code(5, "DeleteRecords: leader unknown")
                )
            return dict(results)

        return await self._retrying("delete_records", attempt, timeout + self._request_timeout_ms)
