"""ConsumerGroupHeartbeat (KIP-848) and ConsumerGroupDescribe handlers."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from aiokafka_lead.testing.fake.consumer_groups import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    TP,
    ConsumerGroup,
    ConsumerMember,
)

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.view import ClusterView

CLIENT_MEMBER_ID_VERSION = 1

Response = ConsumerGroupHeartbeatResponse


def _error(code: int, message: str | None = None) -> Response:
    return Response(error_code=code, error_message=message)


def _names(cluster: ClusterView, parts: list[ConsumerGroupHeartbeatRequest.TopicPartitions]) -> set[TP]:
    out: set[TP] = set()
    for t in parts:
        topic = cluster.topic_by_id(t.topic_id)
        if topic is not None:
            out.update((topic.name, p) for p in t.partitions)
    return out


def _assignment(cluster: ClusterView, tps: set[TP]) -> Response.Assignment:
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(tps):
        by_topic.setdefault(topic, []).append(p)
    return Response.Assignment(
        topic_partitions=[
            Response.TopicPartitions(topic_id=cluster.topics[t].topic_id, partitions=ps)
            for t, ps in by_topic.items()
        ]
    )


def _join(
    group: ConsumerGroup, header: RequestHeader, request: ConsumerGroupHeartbeatRequest, member_id: str
) -> ConsumerMember | Response:
    """Epoch 0: a new member, a member starting over, or a static member coming back."""
    if request.instance_id is not None:
        previous = group.member_by_instance(request.instance_id)
        if previous is not None and previous.member_id != member_id:
            if not previous.departed:
                in_use = f"instance id {request.instance_id} is in use"
                return _error(ErrorCode.UNRELEASED_INSTANCE_ID, in_use)
            # the static member is back: it takes over its predecessor's place and assignment
            member = ConsumerMember(
                member_id,
                request.instance_id,
                epoch=previous.epoch,
                previous_epoch=previous.previous_epoch,
                assigned=set(previous.assigned),
                topic_names=previous.topic_names,
                topic_regex=previous.topic_regex,
            )
            group.members = {
                (member_id if k == previous.member_id else k): (member if v is previous else v)
                for k, v in group.members.items()
            }
            group.target[member_id] = group.target.pop(previous.member_id, set())
            return member
    group.members.pop(member_id, None)
    member = ConsumerMember(member_id, request.instance_id, client_id=header.client_id or "")
    group.members[member_id] = member
    group.epoch += 1  # a (re)joining member is a new member: the group epoch moves, as in Kafka
    return member


async def handle_consumer_group_heartbeat(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: ConsumerGroupHeartbeatRequest
) -> Response:
    if not cluster.groups.is_coordinator(node_id, request.group_id):
        return _error(ErrorCode.NOT_COORDINATOR)
    classic = cluster.groups.groups.get(request.group_id)
    if classic is not None and classic.members:
        return _error(ErrorCode.GROUP_ID_NOT_FOUND, f"group {request.group_id} is not a consumer group")
    group = cluster.groups.consumer_group(request.group_id)
    member_id, epoch = request.member_id, request.member_epoch
    version = header.api_version
    if version >= CLIENT_MEMBER_ID_VERSION and not member_id:
        return _error(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if not member_id:
        member_id = str(uuid.uuid4())
    member = group.members.get(member_id)
    if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        if member is None:
            return _error(ErrorCode.UNKNOWN_MEMBER_ID)
        if epoch == STATIC_LEAVE_EPOCH and member.instance_id is not None:
            member.departed = True
        else:
            group.remove(member_id)
        return Response(member_id=member_id, member_epoch=epoch)
    owned = None if request.topic_partitions is None else _names(cluster, request.topic_partitions)
    full = epoch == 0
    if full:
        joined = _join(group, header, request, member_id)
        if isinstance(joined, Response):
            return joined
        member = joined
    elif member is None or member.departed:
        return _error(ErrorCode.UNKNOWN_MEMBER_ID)
    else:
        code = group.epoch_error(member, epoch, owned)
        if code:
            return _error(code)
    if request.subscribed_topic_names is not None:
        member.topic_names, member.topic_regex = tuple(request.subscribed_topic_names), None
    if request.subscribed_topic_regex is not None:
        member.topic_regex = request.subscribed_topic_regex
    if request.rack_id is not None:
        member.rack_id = request.rack_id
    if owned is not None:
        member.owned = owned
    if request.server_assignor is not None:
        group.assignor = request.server_assignor
    group.compute_target({name: len(t.partitions) for name, t in cluster.topics.items()})
    grant = group.grantable(member)
    # a partition taken from the member is withdrawn at once; new ones come when free
    new = (member.assigned & group.target.get(member_id, set())) | grant
    changed = new != member.assigned
    if changed or full:
        if changed or member.epoch == 0:
            group.epoch = max(group.epoch, member.epoch + 1)  # epochs only go up
            member.previous_epoch, member.epoch = member.epoch, group.epoch
        member.assigned = new
    # as Kafka: the assignment goes with a change, a join, and every full request (one that
    # sets the rebalance timeout, the subscription and the owned partitions)
    full_request = (
        request.rebalance_timeout_ms != -1
        and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
        and request.topic_partitions is not None
    )
    assignment = _assignment(cluster, new) if changed or full or full_request else None
    return Response(
        member_id=member_id,
        member_epoch=member.epoch,
        heartbeat_interval_ms=cluster.groups.consumer_heartbeat_interval_ms,
        assignment=assignment,
    )


def _described(
    cluster: ClusterView, tps: set[TP]
) -> ConsumerGroupDescribeResponse.Assignment:
    D = ConsumerGroupDescribeResponse
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(tps):
        by_topic.setdefault(topic, []).append(p)
    return D.Assignment(
        topic_partitions=[
            D.TopicPartitions(topic_id=cluster.topics[t].topic_id, topic_name=t, partitions=ps)
            for t, ps in by_topic.items()
        ]
    )


async def handle_consumer_group_describe(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: ConsumerGroupDescribeRequest
) -> ConsumerGroupDescribeResponse:
    D = ConsumerGroupDescribeResponse
    groups = []
    for group_id in request.group_ids:
        if not cluster.groups.is_coordinator(node_id, group_id):
            groups.append(D.DescribedGroup(group_id=group_id, error_code=ErrorCode.NOT_COORDINATOR))
            continue
        group = cluster.groups.consumer_groups.get(group_id)
        if group is None:
            groups.append(
                D.DescribedGroup(
                    group_id=group_id,
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {group_id} not found.",
                )
            )
            continue
        groups.append(
            D.DescribedGroup(
                group_id=group_id,
                group_state=group.state,
                group_epoch=group.epoch,
                assignment_epoch=group.epoch,
                assignor_name=group.assignor,
                members=[
                    D.Member(
                        member_id=m.member_id,
                        instance_id=m.instance_id,
                        rack_id=m.rack_id,
                        member_epoch=m.epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=list(m.topic_names),
                        subscribed_topic_regex=m.topic_regex,
                        assignment=_described(cluster, m.assigned),
                        target_assignment=_described(cluster, group.target.get(m.member_id, set())),
                    )
                    for m in group.members.values()
                ],
            )
        )
    return D(groups=groups)
