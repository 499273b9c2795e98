"""ShareGroupHeartbeat, ShareFetch and ShareAcknowledge (KIP-932) on the fake cluster.

Share sessions follow Kafka's rules: epoch 0 opens (or replaces) the member's session on
the node and may not carry acknowledgements (INVALID_REQUEST); a later request must carry
the session's next epoch (INVALID_SHARE_SESSION_EPOCH) of a session the node knows
(SHARE_SESSION_NOT_FOUND); -1 closes it and releases what the member holds there. A
ShareFetch long-polls until records are available, its acknowledgements were applied, a
lock expires or ``max_wait_ms`` passes; with IsRenewAck it fetches nothing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from aiokafka_lead.testing.fake.core import TP
from aiokafka_lead.testing.fake.handlers.common import (
    endpoints,
    hint_for,
)
from aiokafka_lead.testing.fake.share_groups import ShareGroup, ShareMember, ShareSessionState

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.view import ClusterView

RECORD_LIMIT = 1
#: Kafka 4.4's message for INVALID_RECORD_STATE on an acknowledgement
NOT_ACQUIRED = "The offset cannot be acknowledged. The offset is not acquired."

HB = ShareGroupHeartbeatResponse


# ----------------------------------------------------------------- membership
async def handle_share_group_heartbeat(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: ShareGroupHeartbeatRequest
) -> ShareGroupHeartbeatResponse:
    if not cluster.groups.is_coordinator(node_id, request.group_id):
        return HB(error_code=ErrorCode.NOT_COORDINATOR)
    shares = cluster.shares
    group = shares.group(request.group_id)
    member_id, epoch = request.member_id, request.member_epoch
    if not member_id:
        return HB(error_code=ErrorCode.INVALID_REQUEST, error_message="MemberId can't be empty.")
    member = group.members.get(member_id)
    if epoch == -1:
        if member is None:
            return HB(
            error_code=ErrorCode.UNKNOWN_MEMBER_ID, error_message=_not_member(member_id, group.group_id)
        )
        del group.members[member_id]
        group.epoch += 1
        shares.release_member(group, member_id)
        return HB(member_id=member_id, member_epoch=-1)
    if epoch == 0:
        if not request.subscribed_topic_names:
            return HB(
                error_code=ErrorCode.INVALID_REQUEST,
                error_message="SubscribedTopicNames must be set on join.",
            )
        group.epoch += 1
        member = ShareMember(member_id, header.client_id or "", epoch=group.epoch)
        group.members[member_id] = member
    elif member is None:
        return HB(
            error_code=ErrorCode.UNKNOWN_MEMBER_ID, error_message=_not_member(member_id, group.group_id)
        )
    elif epoch != member.epoch:
        side = "greater" if epoch > member.epoch else "smaller"
        return HB(
            error_code=ErrorCode.FENCED_MEMBER_EPOCH,
            error_message=(
                f"The share group member has a {side} member epoch ({epoch}) than the one known by the "
                f"group coordinator ({member.epoch}). The member must abandon all its partitions and rejoin."
            ),
        )
    if request.subscribed_topic_names is not None:
        member.topics = tuple(sorted(request.subscribed_topic_names))
    target = shares.assignment(group, member)
    assignment = None
    if target != member.sent:
        if member.sent is not None:
            group.epoch += 1
            member.epoch = group.epoch
        member.sent = target
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(target):
            by_topic.setdefault(topic, []).append(p)
        assignment = HB.Assignment(
            topic_partitions=[
                HB.TopicPartitions(topic_id=cluster.topics[t].topic_id, partitions=ps)
                for t, ps in by_topic.items()
            ]
        )
    return HB(
        member_id=member_id,
        member_epoch=member.epoch,
        heartbeat_interval_ms=shares.heartbeat_interval_ms,
        assignment=assignment,
    )


def _not_member(member_id: str, group_id: str) -> str:
    return f"Member {member_id} is not a member of group {group_id}."


# ------------------------------------------------------------------- sessions
def _session(
    cluster: ClusterView, node_id: int, group_id: str, member_id: str, epoch: int
) -> tuple[ShareSessionState | None, int]:
    """The session the request belongs to (opened at epoch 0), or an error code."""
    key = (node_id, group_id, member_id)
    if epoch == 0:
        opened = cluster.shares.sessions[key] = ShareSessionState(epoch=1)
        return opened, 0
    session = cluster.shares.sessions.get(key)
    if session is None:
        return None, ErrorCode.SHARE_SESSION_NOT_FOUND
    if epoch == -1:
        del cluster.shares.sessions[key]
        return session, 0
    if epoch != session.epoch:
        return None, ErrorCode.INVALID_SHARE_SESSION_EPOCH
    session.epoch = 1 if session.epoch >= 2**31 - 1 else session.epoch + 1
    return session, 0


def _acks(
    batches: list[ShareFetchRequest.AcknowledgementBatch]
    | list[ShareAcknowledgeRequest.AcknowledgementBatch],
) -> dict[int, int]:
    out: dict[int, int] = {}
    for b in batches:
        types = list(b.acknowledge_types)
        for i, offset in enumerate(range(b.first_offset, b.last_offset + 1)):
            out[offset] = types[0] if len(types) == 1 else types[i]
    return out


def _close_session(
    cluster: ClusterView, group: ShareGroup, session: ShareSessionState, member_id: str
) -> None:
    """Closing a session releases what the member holds in its partitions."""
    for tp in session.partitions:
        sp = group.partitions.get(tp)
        if sp is None:
            continue
        for rs in sp.records.values():
            if rs.owner == member_id:
                cluster.shares._give_back(group, rs)
    cluster.notify()


# ---------------------------------------------------------------------- fetch
async def handle_share_fetch(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: ShareFetchRequest
) -> ShareFetchResponse:
    group_id, member_id = request.group_id or "", request.member_id or ""
    epoch = request.share_session_epoch
    has_acks = any(p.acknowledgement_batches for t in request.topics for p in t.partitions)
    if epoch == 0 and has_acks:
        return ShareFetchResponse(error_code=ErrorCode.INVALID_REQUEST)
    group = cluster.shares.group(group_id)
    if member_id not in group.members:
        return ShareFetchResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    session, code = _session(cluster, node_id, group_id, member_id, epoch)
    if session is None:
        return ShareFetchResponse(error_code=code)
    responses: dict[TP, ShareFetchResponse.PartitionData] = {}
    acks: dict[TP, dict[int, int]] = {}
    for t in request.topics:
        topic = cluster.topic_by_id(t.topic_id)
        for p in t.partitions:
            if topic is None:
                continue
            tp = (topic.name, p.partition_index)
            session.partitions.add(tp)
            if p.acknowledgement_batches:
                acks[tp] = _acks(p.acknowledgement_batches)
    for f in request.forgotten_topics_data:
        topic = cluster.topic_by_id(f.topic_id)
        if topic is not None:
            session.partitions.difference_update((topic.name, p) for p in f.partitions)
    fetch = epoch != -1 and not request.is_renew_ack
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    hinted: set[int] = set()
    # as a Kafka broker: the fetch is planned before the acknowledgements apply, so a record
    # released by this request is not handed out again by it
    got = (
        _fetch_round(cluster, node_id, group, session, request, member_id, responses, hinted) if fetch else 0
    )
    for tp, offsets in acks.items():
        ok = cluster.shares.acknowledge(group, tp, member_id, offsets)
        data = responses.setdefault(tp, ShareFetchResponse.PartitionData(partition_index=tp[1], records=b""))
        if not ok:
            data.acknowledge_error_code = ErrorCode.INVALID_RECORD_STATE
            data.acknowledge_error_message = NOT_ACQUIRED
    if epoch == -1:
        _close_session(cluster, group, session, member_id)
    while fetch and not got and not acks:
        nearest = cluster.shares.expire_due(group)
        got = _fetch_round(cluster, node_id, group, session, request, member_id, responses, hinted)
        remaining = deadline - time.monotonic()
        if got or remaining <= 0:
            break
        wait = remaining if nearest is None else min(remaining, max(nearest - time.monotonic(), 0.0))
        with anyio.move_on_after(wait):
            await cluster.wait_changed()
    by_topic: dict[str, list[ShareFetchResponse.PartitionData]] = {}
    for (name, _), data in sorted(responses.items()):
        by_topic.setdefault(name, []).append(data)
    return ShareFetchResponse(
        acquisition_lock_timeout_ms=group.lock_ms,
        responses=[
            ShareFetchResponse.ShareFetchableTopicResponse(topic_id=cluster.topics[t].topic_id, partitions=ps)
            for t, ps in by_topic.items()
        ],
        node_endpoints=endpoints(cluster, hinted, ShareFetchResponse.NodeEndpoint),
    )


def _fetch_round(  # noqa: PLR0917 - one pass of the handler over its own state
    cluster: ClusterView,
    node_id: int,
    group: ShareGroup,
    session: ShareSessionState,
    request: ShareFetchRequest,
    member_id: str,
    responses: dict[TP, ShareFetchResponse.PartitionData],
    hinted: set[int],
) -> int:
    got = 0
    budget = request.max_records
    strict = request.share_acquire_mode == RECORD_LIMIT
    for tp in sorted(session.partitions):
        data = responses.get(tp)
        if data is None:
            data = responses[tp] = ShareFetchResponse.PartitionData(partition_index=tp[1], records=b"")
        part = cluster.find_partition(*tp)
        if part is None:
            data.error_code = ErrorCode.UNKNOWN_TOPIC_ID
            continue
        if part.leader_id != node_id:
            data.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            hint = hint_for(cluster, part)
            data.current_leader = ShareFetchResponse.LeaderIdAndEpoch(
                leader_id=hint.leader_id, leader_epoch=hint.leader_epoch
            )
            hinted.update(hint.endpoint_nodes)
            continue
        if budget <= 0:
            continue
        ranges = cluster.shares.acquire(group, tp, member_id, budget, strict=strict)
        if not ranges:
            continue
        count = sum(last - first + 1 for first, last, _ in ranges)
        budget -= count
        got += count
        data.acquired_records = [
            ShareFetchResponse.AcquiredRecords(first_offset=f, last_offset=la, delivery_count=c)
            for f, la, c in ranges
        ]
        data.records = part.read(ranges[0][0], 2**31 - 1, at_least_one=True, below=ranges[-1][1] + 1)
    return got


# ---------------------------------------------------------------- acknowledge
async def handle_share_acknowledge(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: ShareAcknowledgeRequest
) -> ShareAcknowledgeResponse:
    group_id, member_id = request.group_id or "", request.member_id or ""
    group = cluster.shares.group(group_id)
    if request.share_session_epoch == 0:
        return ShareAcknowledgeResponse(error_code=ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    session, code = _session(cluster, node_id, group_id, member_id, request.share_session_epoch)
    if session is None:
        return ShareAcknowledgeResponse(error_code=code)
    topics = []
    for t in request.topics:
        topic = cluster.topic_by_id(t.topic_id)
        parts = []
        for p in t.partitions:
            if topic is None:
                parts.append(
                    ShareAcknowledgeResponse.PartitionData(
                        partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_ID
                    )
                )
                continue
            ok = cluster.shares.acknowledge(
                group, (topic.name, p.partition_index), member_id, _acks(p.acknowledgement_batches)
            )
            parts.append(
                ShareAcknowledgeResponse.PartitionData(
                    partition_index=p.partition_index,
                    error_code=ErrorCode.NONE if ok else ErrorCode.INVALID_RECORD_STATE,
                    error_message=None if ok else NOT_ACQUIRED,
                )
            )
        topics.append(
            ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse(topic_id=t.topic_id, partitions=parts)
        )
    if request.share_session_epoch == -1:
        _close_session(cluster, group, session, member_id)
    return ShareAcknowledgeResponse(acquisition_lock_timeout_ms=group.lock_ms, responses=topics)


__all__ = ["handle_share_acknowledge", "handle_share_fetch", "handle_share_group_heartbeat"]
