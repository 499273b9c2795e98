"""Fetch v4-18: reads, long-poll, KIP-320 epoch checks and DivergingEpoch, KIP-951 hints,
KIP-392 reads from followers (with ``FakeCluster.replica_selector`` set, see ``replicas.py``).

Long-poll: when fewer than ``min_bytes`` are ready the handler waits on the cluster's
change event (set by appends, leader moves, truncation) inside ``move_on_after(max_wait)``
and re-reads; it never polls on a timer. Fetch sessions are not kept: every response
carries session_id 0, which tells clients to send full fetches.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

import anyio

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import FetchRequest, FetchResponse
from aiokafka_lead.testing.fake.handlers.common import endpoints, epoch_check, hint_for, leader_check
from aiokafka_lead.testing.fake.replicas import has_offset

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.view import ClusterView

TOPIC_ID_VERSION = 13
SESSION_VERSION = 7
DIVERGING_EPOCH_VERSION = 12
HINT_VERSION = 16  # KIP-951: CurrentLeader (partition tag 1), NodeEndpoints (top-level tag 0)
RACK_VERSION = 11  # KIP-392: RackId in, PreferredReadReplica out

PartData = FetchResponse.PartitionData


async def handle_fetch(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: FetchRequest
) -> FetchResponse:
    if header.api_version >= SESSION_VERSION and request.session_id != 0:
        # The fake never creates a session (it answers session_id 0), so any id is unknown.
        return FetchResponse(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0)
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    while True:
        response, ready, failed = _read(cluster, node_id, header.api_version, request)
        remaining = deadline - time.monotonic()
        if failed or ready >= request.min_bytes or remaining <= 0:
            return response
        with anyio.move_on_after(remaining):
            await cluster.wait_changed()


def _read(
    cluster: ClusterView, node_id: int, version: int, request: FetchRequest
) -> tuple[FetchResponse, int, bool]:
    """One pass over the request: (response, bytes of records, any partition error)."""
    budget = request.max_bytes if version >= 3 else 2**31 - 1
    total = 0
    failed = False
    hinted: set[int] = set()
    topics: list[FetchResponse.FetchableTopicResponse] = []
    for t in request.topics:
        if version >= TOPIC_ID_VERSION:
            topic = cluster.topic_by_id(t.topic_id)
            name = topic.name if topic is not None else None
            missing = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            name = t.topic
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        out = FetchResponse.FetchableTopicResponse(
            topic=t.topic if version < TOPIC_ID_VERSION else "",
            topic_id=t.topic_id if version >= TOPIC_ID_VERSION else uuid.UUID(int=0),
        )
        topics.append(out)
        for p in t.partitions:
            result = PartData(
                partition_index=p.partition,
                high_watermark=-1,
                last_stable_offset=-1,
                log_start_offset=-1,
                aborted_transactions=None,
                records=b"",
            )
            out.partitions.append(result)
            part = cluster.find_partition(name, p.partition) if name is not None else None
            if part is None:
                result.error_code = missing
                failed = True
                continue
            epoch = p.current_leader_epoch if version >= 9 else -1
            follower = (
                cluster.replica_selector is not None
                and version >= RACK_VERSION
                and node_id != part.leader_id
                and node_id in part.replicas
            )
            error = epoch_check(part, epoch) if follower else leader_check(part, node_id, epoch)
            if error:
                failed = True
                result.error_code = error
                moved = error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)
                if moved and version >= HINT_VERSION:
                    hint = hint_for(cluster, part)
                    result.current_leader = FetchResponse.LeaderIdAndEpoch(
                        leader_id=hint.leader_id, leader_epoch=hint.leader_epoch
                    )
                    hinted.update(hint.endpoint_nodes)
                continue
            result.high_watermark = part.high_watermark
            result.last_stable_offset = part.last_stable_offset
            result.log_start_offset = part.log_start_offset
            selector = cluster.replica_selector
            if selector is not None and version >= RACK_VERSION and request.rack_id and not follower:
                chosen = selector(cluster, part, request.rack_id, p.fetch_offset)
                if chosen is not None and chosen != node_id:
                    result.preferred_read_replica = chosen  # no records: read them there
                    failed = True  # answer at once, like a real leader
                    continue
            committed_only = request.isolation_level == 1
            if version >= DIVERGING_EPOCH_VERSION and p.last_fetched_epoch >= 0:
                end_epoch, end_offset = part.end_offset_for_epoch(p.last_fetched_epoch)
                if end_epoch != p.last_fetched_epoch or end_offset < p.fetch_offset:
                    result.diverging_epoch = FetchResponse.EpochEndOffset(
                        epoch=end_epoch, end_offset=end_offset
                    )
                    result.records = b""
                    failed = True  # answer at once, like a real leader
                    continue
            if not has_offset(part, node_id, p.fetch_offset):
                result.error_code = ErrorCode.OFFSET_OUT_OF_RANGE  # offsets -1, as Kafka answers
                result.high_watermark = result.last_stable_offset = result.log_start_offset = -1
                failed = True
                continue
            limit = min(p.partition_max_bytes, budget - total)
            below = part.last_stable_offset if committed_only else None
            if follower and node_id in part.replica_log_end:
                lag_end = part.replica_log_end[node_id]
                below = lag_end if below is None else min(below, lag_end)
            data = part.read(p.fetch_offset, max(limit, 0), at_least_one=total == 0, below=below)
            result.records = data
            if committed_only:
                result.aborted_transactions = [
                    FetchResponse.AbortedTransaction(producer_id=pid, first_offset=first)
                    for pid, first in part.aborted_between(p.fetch_offset, part.last_stable_offset)
                ]
            total += len(data)
    response = FetchResponse(responses=topics, error_code=ErrorCode.NONE, session_id=0)
    if hinted and version >= HINT_VERSION:
        response.node_endpoints = endpoints(cluster, hinted, FetchResponse.NodeEndpoint)
    return response, total, failed

