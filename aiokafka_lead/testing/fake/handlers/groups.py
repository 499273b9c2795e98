"""JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch handlers."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import anyio

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from aiokafka_lead.testing.fake.groups import (
    COMPLETING,
    EMPTY,
    PREPARING,
    STABLE,
    CommittedOffset,
    Group,
    Member,
)
from aiokafka_lead.testing.fake.handlers.common import coordinator_only

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.view import ClusterView

MEMBER_ID_REQUIRED_VERSION = 4
NULLABLE_PROTOCOL_NAME_VERSION = 7


def _member_check(group: Group | None, member_id: str, generation_id: int) -> int:
    if group is None or member_id not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    return ErrorCode.NONE


def _group_and_member_check(
    cluster: ClusterView, request: SyncGroupRequest | HeartbeatRequest
) -> tuple[Group | None, int]:
    """The request's group and ``_member_check`` of the member and generation it names."""
    group = cluster.groups.groups.get(request.group_id)
    return group, _member_check(group, request.member_id, request.generation_id)


def _join_error(error_code: int, member_id: str, version: int) -> JoinGroupResponse:
    """protocol_name is null in errors from v7 (nullable there), as Kafka sends it."""
    return JoinGroupResponse(
        error_code=error_code,
        member_id=member_id,
        protocol_name=None if version >= NULLABLE_PROTOCOL_NAME_VERSION else "",
    )


async def handle_join_group(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: JoinGroupRequest
) -> JoinGroupResponse:
    version = header.api_version
    if not cluster.groups.is_coordinator(node_id, request.group_id):
        return _join_error(ErrorCode.NOT_COORDINATOR, "", version)
    group = cluster.groups.group(request.group_id)
    member_id = request.member_id
    if not member_id:
        member_id = f"{header.client_id or 'member'}-{uuid.uuid4()}"
        if version >= MEMBER_ID_REQUIRED_VERSION:
            group.pending.add(member_id)
            return _join_error(ErrorCode.MEMBER_ID_REQUIRED, member_id, version)
    elif member_id not in group.members and member_id not in group.pending:
        return _join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id, version)
    protocols = [(p.name, bytes(p.metadata)) for p in request.protocols]
    if group.members and (
        request.protocol_type != group.protocol_type
        or not any(
            all(any(n == name for n, _ in m.protocols) for m in group.members.values())
            for name, _ in protocols
        )
    ):
        return _join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id, version)
    group.pending.discard(member_id)
    group.protocol_type = request.protocol_type
    rebalance_ms = request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms
    member = group.members.get(member_id)
    if member is None:
        member = Member(member_id, request.group_instance_id, protocols, rebalance_ms)
        group.members[member_id] = member
    else:
        member.protocols, member.rebalance_timeout_ms = protocols, rebalance_ms
    group.start_rebalance()
    member.joined = True
    group.maybe_complete_join()
    done = group.join_done
    if done is not None and not done.is_set():
        with anyio.move_on_after(group.rebalance_timeout_s):
            await done.wait()
        if not done.is_set():
            group.maybe_complete_join(force=True)
    if member_id not in group.members:
        return _join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id, version)
    is_leader = member_id == group.leader_id
    return JoinGroupResponse(
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader_id or "",
        member_id=member_id,
        members=[
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=dict(m.protocols).get(group.protocol_name or "", b""),
            )
            for m in group.members.values()
        ]
        if is_leader
        else [],
    )


@coordinator_only("group", SyncGroupResponse)
async def handle_sync_group(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: SyncGroupRequest
) -> SyncGroupResponse:
    group, error = _group_and_member_check(cluster, request)
    if error:
        return SyncGroupResponse(error_code=error)
    assert group is not None
    if group.state == PREPARING:
        return SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    generation = group.generation_id
    if group.state == COMPLETING:
        if request.member_id == group.leader_id:
            group.complete_sync({a.member_id: bytes(a.assignment) for a in request.assignments})
        elif group.sync_done is not None:
            with anyio.move_on_after(group.rebalance_timeout_s):
                await group.sync_done.wait()
    member = group.members.get(request.member_id)
    if member is None:
        return SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    if group.state != STABLE or group.generation_id != generation:
        return SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    return SyncGroupResponse(
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        assignment=member.assignment,
    )


@coordinator_only("group", HeartbeatResponse)
async def handle_heartbeat(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: HeartbeatRequest
) -> HeartbeatResponse:
    group, error = _group_and_member_check(cluster, request)
    if not error and group is not None and group.state == PREPARING:
        error = ErrorCode.REBALANCE_IN_PROGRESS
    return HeartbeatResponse(error_code=error)


@coordinator_only("group", LeaveGroupResponse)
async def handle_leave_group(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: LeaveGroupRequest
) -> LeaveGroupResponse:
    group = cluster.groups.groups.get(request.group_id)
    if header.api_version < 3:
        ok = group is not None and group.remove(request.member_id)
        return LeaveGroupResponse(error_code=ErrorCode.NONE if ok else ErrorCode.UNKNOWN_MEMBER_ID)
    members = []
    for m in request.members:
        ok = group is not None and group.remove(m.member_id)
        members.append(
            LeaveGroupResponse.MemberResponse(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=ErrorCode.NONE if ok else ErrorCode.UNKNOWN_MEMBER_ID,
            )
        )
    return LeaveGroupResponse(members=members)


async def handle_offset_commit(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: OffsetCommitRequest
) -> OffsetCommitResponse:
    version = header.api_version
    error: int = ErrorCode.NONE
    group: Group | None = None
    if not cluster.groups.is_coordinator(node_id, request.group_id):
        error = ErrorCode.NOT_COORDINATOR
    else:
        group = cluster.groups.group(request.group_id)
        generation = request.generation_id_or_member_epoch
        consumer_group = cluster.groups.consumer_groups.get(request.group_id)
        if generation < 0 and not request.member_id:
            if group.state != EMPTY or (consumer_group is not None and consumer_group.members):
                error = ErrorCode.UNKNOWN_MEMBER_ID  # a simple (admin) commit needs an empty group
        elif consumer_group is not None:
            error = consumer_group.commit_error(request.member_id, generation)  # KIP-848: epochs
        else:
            error = _member_check(group, request.member_id, generation)
            if not error and group.state == PREPARING:
                error = ErrorCode.REBALANCE_IN_PROGRESS
    topics = []
    for t in request.topics:
        results = []
        for p in t.partitions:
            code = error
            if not code and cluster.find_partition(t.name, p.partition_index) is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if not code and group is not None:
                epoch = p.committed_leader_epoch if version >= 6 else -1
                group.offsets[(t.name, p.partition_index)] = CommittedOffset(
                    p.committed_offset, epoch, p.committed_metadata
                )
            results.append(
                OffsetCommitResponse.OffsetCommitResponsePartition(
                    partition_index=p.partition_index, error_code=code
                )
            )
        topics.append(OffsetCommitResponse.OffsetCommitResponseTopic(name=t.name, partitions=results))
    return OffsetCommitResponse(topics=topics)


def _committed(
    cluster: ClusterView, node_id: int, group_id: str, wanted: list[tuple[str, list[int]]] | None
) -> tuple[int, list[tuple[str, list[tuple[int, CommittedOffset | None]]]]]:
    """(group error, [(topic, [(partition, committed or None)])]) for OffsetFetch."""
    if not cluster.groups.is_coordinator(node_id, group_id):
        return ErrorCode.NOT_COORDINATOR, []
    group = cluster.groups.groups.get(group_id)
    offsets = group.offsets if group is not None else {}
    if wanted is None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(offsets):
            by_topic.setdefault(topic, []).append(partition)
        wanted = list(by_topic.items())
    return ErrorCode.NONE, [(t, [(p, offsets.get((t, p))) for p in ps]) for t, ps in wanted]


async def handle_offset_fetch(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: OffsetFetchRequest
) -> OffsetFetchResponse:
    version = header.api_version
    if version < 8:
        wanted = (
            None
            if request.topics is None
            else [(t.name, list(t.partition_indexes)) for t in request.topics]
        )
        error, found = _committed(cluster, node_id, request.group_id, wanted)
        P = OffsetFetchResponse.OffsetFetchResponsePartition
        topics = [
            OffsetFetchResponse.OffsetFetchResponseTopic(
                name=t,
                partitions=[
                    P(partition_index=p, committed_offset=-1, metadata="", error_code=error)
                    if c is None
                    else P(
                        partition_index=p,
                        committed_offset=c.offset,
                        committed_leader_epoch=c.leader_epoch if version >= 5 else -1,
                        metadata=c.metadata,
                    )
                    for p, c in ps
                ],
            )
            for t, ps in found
        ]
        return OffsetFetchResponse(topics=topics, error_code=error if version >= 2 else ErrorCode.NONE)
    groups = []
    for g in request.groups:
        wanted = (
            None if g.topics is None else [(t.name, list(t.partition_indexes)) for t in g.topics]
        )
        error, found = _committed(cluster, node_id, g.group_id, wanted)
        consumer_group = cluster.groups.consumer_groups.get(g.group_id)
        if not error and consumer_group is not None and g.member_id is not None and g.member_epoch >= 0:
            error = consumer_group.commit_error(g.member_id, g.member_epoch)  # KIP-848 (v9)
            found = [] if error else found
        Ps = OffsetFetchResponse.OffsetFetchResponsePartitions
        groups.append(
            OffsetFetchResponse.OffsetFetchResponseGroup(
                group_id=g.group_id,
                error_code=error,
                topics=[
                    OffsetFetchResponse.OffsetFetchResponseTopics(
                        name=t,
                        partitions=[
                            Ps(partition_index=p, committed_offset=-1, metadata="")
                            if c is None
                            else Ps(
                                partition_index=p,
                                committed_offset=c.offset,
                                committed_leader_epoch=c.leader_epoch,
                                metadata=c.metadata,
                            )
                            for p, c in ps
                        ],
                    )
                    for t, ps in found
                ],
            )
        )
    return OffsetFetchResponse(groups=groups)
