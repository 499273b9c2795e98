"""Produce v3-12: append, idempotent sequence checks, KIP-951 hints from stale leaders."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import CorruptRecordError, DecodeError
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import ProduceRequest, ProduceResponse
from aiokafka_lead.records import MemoryRecords, RecordBatch
from aiokafka_lead.testing.fake.handlers.common import endpoints, hint_for, leader_check
from aiokafka_lead.testing.fake.partition import SequenceError

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.view import ClusterView

HINT_VERSION = 10  # KIP-951: CurrentLeader (partition tag 0), NodeEndpoints (top-level tag 0)

Part = ProduceResponse.PartitionProduceResponse


def _transaction_check(
    cluster: ClusterView,
    request: ProduceRequest,
    topic: str,
    p: ProduceRequest.PartitionProduceData,
    version: int,
) -> int:
    """A transactional batch must belong to its producer's open transaction (KIP-890)."""
    data = bytes(p.records or b"")
    try:
        first = next(iter(MemoryRecords(data)), None)
    except (CorruptRecordError, DecodeError):
        return ErrorCode.NONE  # append() reports the corruption
    if not isinstance(first, RecordBatch) or not first.is_transactional:
        return ErrorCode.NONE
    return cluster.txns.produce_check(
        request.transactional_id, first.producer_id, first.producer_epoch, (topic, p.index), version
    )


async def handle_produce(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: ProduceRequest
) -> ProduceResponse | None:
    version = header.api_version
    bad_acks = request.acks not in (0, 1, -1)
    hinted: set[int] = set()
    appended = False
    topics: list[ProduceResponse.TopicProduceResponse] = []
    for t in request.topic_data:
        results: list[Part] = []
        for p in t.partition_data:
            result = Part(index=p.index, base_offset=-1)
            results.append(result)
            if bad_acks:
                result.error_code = ErrorCode.INVALID_REQUIRED_ACKS
                continue
            part = cluster.find_partition(t.name, p.index)
            if part is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            error = leader_check(part, node_id, -1)
            if error == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                result.error_code = error
                if version >= HINT_VERSION:
                    hint = hint_for(cluster, part)
                    result.current_leader = ProduceResponse.LeaderIdAndEpoch(
                        leader_id=hint.leader_id, leader_epoch=hint.leader_epoch
                    )
                    hinted.update(hint.endpoint_nodes)
                continue
            limit = cluster.topics[t.name].max_message_bytes
            if limit is not None and len(p.records or b"") > limit:
                result.error_code = ErrorCode.MESSAGE_TOO_LARGE
                result.error_message = (
                    f"the batch is {len(p.records or b'')} bytes, over max.message.bytes={limit}"
                    if version >= 8
                    else None
                )
                continue
            txn_error = _transaction_check(cluster, request, t.name, p, version)
            if txn_error:
                result.error_code = txn_error
                continue
            try:
                base, error = part.append(bytes(p.records or b""))
            except SequenceError as exc:
                result.error_code = exc.error_code
                result.error_message = str(exc) if version >= 8 else None
                continue
            except (CorruptRecordError, DecodeError):
                result.error_code = ErrorCode.CORRUPT_MESSAGE
                continue
            appended = True
            result.error_code = ErrorCode.NONE
            result.base_offset = base
            result.log_start_offset = part.log_start_offset
        topics.append(ProduceResponse.TopicProduceResponse(name=t.name, partition_responses=results))
    if appended:
        cluster.notify()
    if request.acks == 0:
        return None
    response = ProduceResponse(responses=topics)
    if hinted and version >= HINT_VERSION:
        response.node_endpoints = endpoints(cluster, hinted, ProduceResponse.NodeEndpoint)
    return response
