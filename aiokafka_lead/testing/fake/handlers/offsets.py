"""ListOffsets v1-10 and OffsetForLeaderEpoch v2-4 (KIP-320 epoch checks on both)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from aiokafka_lead.testing.fake.handlers.common import leader_check

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.partition import Partition
    from aiokafka_lead.testing.fake.view import ClusterView

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


async def handle_list_offsets(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: ListOffsetsRequest
) -> ListOffsetsResponse:
    version = header.api_version
    topics = []
    for t in request.topics:
        results = []
        for p in t.partitions:
            result = ListOffsetsResponse.ListOffsetsPartitionResponse(
                partition_index=p.partition_index
            )
            results.append(result)
            part = cluster.find_partition(t.name, p.partition_index)
            if part is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            epoch = p.current_leader_epoch if version >= 4 else -1
            error = leader_check(part, node_id, epoch)
            if error:
                result.error_code = error
                continue
            offset, timestamp = _lookup(part, p.timestamp, request.isolation_level)
            result.offset, result.timestamp = offset, timestamp
            if version >= 4:
                result.leader_epoch = _epoch_of(part, offset, p.timestamp)
        topics.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=t.name, partitions=results))
    return ListOffsetsResponse(topics=topics)


def _lookup(part: Partition, spec: int, isolation_level: int) -> tuple[int, int]:
    if spec in (EARLIEST, EARLIEST_LOCAL):
        return part.log_start_offset, -1
    if spec == LATEST:
        return (part.last_stable_offset if isolation_level == 1 else part.high_watermark), -1
    if spec == LATEST_TIERED:
        return part.log_start_offset - 1, -1  # nothing is tiered in the fake
    if spec == MAX_TIMESTAMP:
        return part.max_timestamp_offset()
    return part.offset_for_timestamp(spec)


def _epoch_of(part: Partition, offset: int, spec: int) -> int:
    """Like Java: LATEST names the latest epoch; an offset names the epoch that wrote it."""
    if offset < 0:
        return -1
    if spec == LATEST:
        return part.epoch_history[-1][0]
    return part.epoch_at(offset)


async def handle_offset_for_leader_epoch(
    cluster: ClusterView,
    node_id: int,
    header: RequestHeader,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse:
    """End offset of the requested epoch from the partition's epoch history."""
    topics = []
    for t in request.topics:
        results = []
        for p in t.partitions:
            result = OffsetForLeaderEpochResponse.EpochEndOffset(partition=p.partition)
            results.append(result)
            part = cluster.find_partition(t.topic, p.partition)
            if part is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            error = leader_check(part, node_id, p.current_leader_epoch)
            if error:
                result.error_code = error
                continue
            result.leader_epoch, result.end_offset = part.end_offset_for_epoch(p.leader_epoch)
        topics.append(
            OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=t.topic, partitions=results)
        )
    return OffsetForLeaderEpochResponse(topics=topics)
