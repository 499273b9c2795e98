"""Record deletion (DeleteRecords); offset look-ups come from the request layer
(:mod:`aiokafka_lead.requests.offsets`: ListOffsets with KIP-207 semantics)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aiokafka_lead.admin.types import RecordsToDelete
from aiokafka_lead.core.client import guarded
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaError, error_for_code
from aiokafka_lead.protocol.messages import DeleteRecordsRequest
from aiokafka_lead.requests.base import check_answered, pick_retry_error, raise_item_errors
from aiokafka_lead.requests.offsets import OffsetsRequests
from aiokafka_lead.structs import TopicPartition


class OffsetsMixin(OffsetsRequests):
    """``list_offsets`` and ``delete_records``."""

    @guarded
    async def delete_records(
        self,
        records_to_delete: Mapping[TopicPartition, int | RecordsToDelete],
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, int]:
        """Delete records before each offset (an int or a ``RecordsToDelete``; -1: to the
        high watermark); return the new low watermarks."""
        await self._check_deletable(records_to_delete)
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
                        if p.error_code == ErrorCode.NONE:
                            results[tp] = p.low_watermark
                        elif (err := error_for_code(p.error_code)).retriable:
                            errors.append(err)
                        else:
                            fatal.append((f"{tp.topic}-{tp.partition}", p.error_code, None))
                raise_item_errors("DeleteRecords", fatal)
            if len(results) < len(wanted):
                raise (
                    pick_retry_error(errors)
                    if errors
                    else error_for_code(ErrorCode.LEADER_NOT_AVAILABLE, "DeleteRecords: leader unknown")
                )
            return dict(results)

        return await self._retrying("delete_records", attempt, timeout + self._request_timeout_ms)

    async def _check_deletable(self, partitions: Iterable[TopicPartition]) -> None:
        """Before DeleteRecords is sent: nothing to check here (a partition the cluster does
        not have fails in the request); aiokafka's client checks them at once."""


__all__ = ["OffsetsMixin"]
