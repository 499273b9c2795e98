"""AddPartitionsToTxn (v0-3 from clients, v4-5 batched as brokers send it), AddOffsetsToTxn,
TxnOffsetCommit, EndTxn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    Response,
    TxnOffsetCommitRequest,
)
from aiokafka_lead.testing.fake.groups import CommittedOffset
from aiokafka_lead.testing.fake.handlers.common import coordinator_only
from aiokafka_lead.testing.fake.intercept import error_response

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.view import ClusterView

TV2_TXN_OFFSET_COMMIT = 5
BATCHED_VERSION = 4  # AddPartitionsToTxn v4+: several transactions per request (brokers only)
Result = AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult


class _SpeaksForTxn(Protocol):
    @property
    def transactional_id(self) -> str: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...


def _txn(request: _SpeaksForTxn) -> tuple[str, int, int]:
    """(transactional id, producer id, epoch): the transaction a request speaks for."""
    return request.transactional_id, request.producer_id, request.producer_epoch


def _add(
    cluster: ClusterView,
    node_id: int,
    txn: tuple[str, int, int],
    topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic],
) -> list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult]:
    """One transaction's partitions: ``txn`` is (transactional id, producer id, epoch)."""
    txn_id, producer_id, producer_epoch = txn
    tps = [(t.name, p) for t in topics for p in t.partitions]
    if not cluster.txns.is_coordinator(node_id, txn_id):
        code: int = ErrorCode.NOT_COORDINATOR
    else:
        code = cluster.txns.add_partitions(txn_id, producer_id, producer_epoch, tps)
    return [
        AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult(
            name=t.name,
            results_by_partition=[Result(partition_index=p, partition_error_code=code) for p in t.partitions],
        )
        for t in topics
    ]


async def handle_add_partitions_to_txn(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    """v0-3: one transaction (clients); v4+: several, as brokers batch them (KIP-890)."""
    if header.api_version < BATCHED_VERSION:
        txn = (
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
        )
        topics = _add(cluster, node_id, txn, request.v3_and_below_topics)
        return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=topics)
    results = [
        AddPartitionsToTxnResponse.AddPartitionsToTxnResult(
            transactional_id=txn.transactional_id,
            topic_results=_add(cluster, node_id, _txn(txn), txn.topics),
        )
        for txn in request.transactions
    ]
    return AddPartitionsToTxnResponse(results_by_transaction=results)


@coordinator_only("transaction", AddOffsetsToTxnResponse)
async def handle_add_offsets_to_txn(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse:
    code = cluster.txns.add_offsets(*_txn(request), request.group_id)
    return AddOffsetsToTxnResponse(error_code=code)


def _member_error(cluster: ClusterView, request: TxnOffsetCommitRequest) -> int:
    """KIP-447: a commit carrying a member id must come from the group's current generation."""
    if request.generation_id_or_member_epoch < 0 and not request.member_id:
        return ErrorCode.NONE
    group = cluster.groups.groups.get(request.group_id)
    if group is None or request.member_id not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if request.generation_id_or_member_epoch != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    return ErrorCode.NONE


async def handle_txn_offset_commit(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: TxnOffsetCommitRequest
) -> Response:
    if not cluster.groups.is_coordinator(node_id, request.group_id):
        code: int = ErrorCode.NOT_COORDINATOR
    else:
        code = _member_error(cluster, request) if header.api_version >= 3 else ErrorCode.NONE
    if not code:
        offsets = {
            (t.name, p.partition_index): CommittedOffset(
                p.committed_offset, p.committed_leader_epoch, p.committed_metadata
            )
            for t in request.topics
            for p in t.partitions
        }
        code = cluster.txns.txn_offset_commit(
            *_txn(request),
            request.group_id,
            offsets,
            implicit=header.api_version >= TV2_TXN_OFFSET_COMMIT,
        )
    return error_response(request, header.api_version, code)  # every partition: the one code


@coordinator_only("transaction", EndTxnResponse)
async def handle_end_txn(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: EndTxnRequest
) -> EndTxnResponse:
    code, pid, epoch = cluster.txns.end_txn(*_txn(request), request.committed, header.api_version)
    return EndTxnResponse(error_code=code, producer_id=pid, producer_epoch=epoch)
