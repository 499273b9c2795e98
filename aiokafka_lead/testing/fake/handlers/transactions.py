"""AddPartitionsToTxn (client versions 0-3), AddOffsetsToTxn, TxnOffsetCommit, EndTxn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from aiokafka_lead.testing.fake.groups import CommittedOffset
from aiokafka_lead.testing.fake.handlers.common import (
    ILLEGAL_GENERATION,
    NOT_COORDINATOR,
    UNKNOWN_MEMBER_ID,
)

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.cluster import FakeCluster

TV2_TXN_OFFSET_COMMIT = 5
Result = AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult


async def handle_add_partitions_to_txn(
    cluster: FakeCluster, node_id: int, header: RequestHeader, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    txn_id = request.v3_and_below_transactional_id
    tps = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
    if not cluster.txns.is_coordinator(node_id, txn_id):
        code = NOT_COORDINATOR
    else:
        code = cluster.txns.add_partitions(
            txn_id, request.v3_and_below_producer_id, request.v3_and_below_producer_epoch, tps
        )
    topics = [
        AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult(
            name=t.name,
            results_by_partition=[Result(partition_index=p, partition_error_code=code) for p in t.partitions],
        )
        for t in request.v3_and_below_topics
    ]
    return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=topics)


async def handle_add_offsets_to_txn(
    cluster: FakeCluster, node_id: int, header: RequestHeader, request: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse:
    if not cluster.txns.is_coordinator(node_id, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=NOT_COORDINATOR)
    code = cluster.txns.add_offsets(
        request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
    )
    return AddOffsetsToTxnResponse(error_code=code)


def _member_error(cluster: FakeCluster, request: TxnOffsetCommitRequest) -> int:
    """KIP-447: a commit carrying a member id must come from the group's current generation."""
    if request.generation_id < 0 and not request.member_id:
        return 0
    group = cluster.groups.groups.get(request.group_id)
    if group is None or request.member_id not in group.members:
        return UNKNOWN_MEMBER_ID
    if request.generation_id != group.generation_id:
        return ILLEGAL_GENERATION
    return 0


async def handle_txn_offset_commit(
    cluster: FakeCluster, node_id: int, header: RequestHeader, request: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse:
    if not cluster.groups.is_coordinator(node_id, request.group_id):
        code = NOT_COORDINATOR
    else:
        code = _member_error(cluster, request) if header.api_version >= 3 else 0
    if not code:
        offsets = {
            (t.name, p.partition_index): CommittedOffset(
                p.committed_offset, p.committed_leader_epoch, p.committed_metadata
            )
            for t in request.topics
            for p in t.partitions
        }
        code = cluster.txns.txn_offset_commit(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            request.group_id,
            offsets,
            implicit=header.api_version >= TV2_TXN_OFFSET_COMMIT,
        )
    topics = [
        TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic(
            name=t.name,
            partitions=[
                TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition(
                    partition_index=p.partition_index, error_code=code
                )
                for p in t.partitions
            ],
        )
        for t in request.topics
    ]
    return TxnOffsetCommitResponse(topics=topics)


async def handle_end_txn(
    cluster: FakeCluster, node_id: int, header: RequestHeader, request: EndTxnRequest
) -> EndTxnResponse:
    if not cluster.txns.is_coordinator(node_id, request.transactional_id):
        return EndTxnResponse(error_code=NOT_COORDINATOR)
    code, pid, epoch = cluster.txns.end_txn(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        request.committed,
        header.api_version,
    )
    return EndTxnResponse(error_code=code, producer_id=pid, producer_epoch=epoch)
