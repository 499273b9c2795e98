"""Consumer-group administration: list, describe, delete, committed offsets.

:class:`GroupCore` sends the requests and returns what the broker said; both clients build
on it. :class:`GroupsMixin` (the typed ``AdminClient``, and the consumer's offset look-ups)
returns listings, descriptions and committed offsets as value types.

``describe_consumer_groups`` asks ConsumerGroupDescribe first (KIP-848 groups) and falls
back to DescribeGroups when the group is not a consumer group (GROUP_ID_NOT_FOUND) or
the broker predates the API, as Java's admin does.

Group requests go to the group's coordinator (FindCoordinator). COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS are retriable: the coordinator is looked
up again on the next attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from aiokafka_lead.admin.base import AdminBase, check_answered, raise_item_errors
from aiokafka_lead.admin.types import GroupDescription, GroupListing, MemberDescription
from aiokafka_lead.client import guarded
from aiokafka_lead.errors import DecodeError, KafkaError, UnsupportedVersionError, error_for_code
from aiokafka_lead.metadata.checks import node_problem
from aiokafka_lead.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerProtocolAssignment,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    OffsetFetchRequest,
)
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

GROUP_KEY = 0
COORDINATOR_NOT_AVAILABLE = 15
GROUP_ID_NOT_FOUND = 69
UNSUPPORTED_VERSION = 35
#: OffsetFetch v9 (KIP-848) checks a member's id and epoch: these answers mean the member's
#: epoch moved on (or it was fenced) and are retried with its identity of the moment
MEMBER_EPOCH_ERRORS = frozenset({25, 110, 113})
MEMBER_FIELDS_VERSION = 9
# OffsetFetch v10 names topics by id only; v8-9 carry names and several groups per request.
OFFSET_FETCH_MAX = 9


class GroupCore(AdminBase):
    """The group requests both clients share."""

    @guarded
    async def find_coordinator(self, group_id: str, coordinator_type: int = GROUP_KEY) -> int:
        """The node id of the coordinator of ``group_id`` (``coordinator_type`` 0) or of a
        transactional id (1), retrying until it is available."""

        async def attempt() -> int:
            conn = await self._core.any_connection()
            version = conn.version_for(FindCoordinatorRequest.API_KEY)
            source = f"FindCoordinator v{version} from {conn.broker}"
            if version >= 4:
                request = FindCoordinatorRequest(key_type=coordinator_type, coordinator_keys=[group_id])
                response = await conn.send(request, version=version)
                entry = next((c for c in response.coordinators if c.key == group_id), None)
                if entry is None:
                    raise error_for_code(
                        COORDINATOR_NOT_AVAILABLE, f"{source}: Coordinators does not name key {group_id!r}"
                    )
                code, node_id, host, port = entry.error_code, entry.node_id, entry.host, entry.port
                message = entry.error_message
            else:
                request = FindCoordinatorRequest(key=group_id, key_type=coordinator_type)
                response = await conn.send(request, version=version)
                code, node_id, host, port, message = (
                    response.error_code,
                    response.node_id,
                    response.host,
                    response.port,
                    response.error_message,
                )
            if code:
                raise error_for_code(code, f"{source} for {group_id!r}{f': {message}' if message else ''}")
            problem = node_problem(node_id, host, port, what="coordinator")
            if problem is not None:  # retried: the next answer may be a good one
                raise error_for_code(COORDINATOR_NOT_AVAILABLE, f"{source}: {problem}")
            if self._core.store.node(node_id) is None:
                await self._core.refresh_metadata(f"coordinator {node_id} unknown")
            return int(node_id)

        return await self._retrying(f"FindCoordinator({group_id})", attempt, None)

    async def _list_groups(self, broker_ids: Sequence[int] | None) -> list[Any]:
        """ListGroups of the given brokers (default: all), one entry per group."""
        nodes = list(broker_ids) if broker_ids is not None else [n.node_id for n in self._core.store.nodes()]
        found: dict[str, Any] = {}
        for node_id in nodes:

            async def attempt(node_id: int = node_id) -> None:
                response = await self._core.send(node_id, ListGroupsRequest())
                if response.error_code:
                    raise error_for_code(response.error_code, f"ListGroups on node {node_id}")
                for g in response.groups:
                    found[g.group_id] = g

            await self._retrying(f"list_consumer_groups(node {node_id})", attempt, None)
        return [found[k] for k in sorted(found)]

    async def _describe_groups(
        self,
        node: int,
        group_ids: list[str],
        include_authorized_operations: bool,
        *,
        max_version: int | None = None,
    ) -> Any:
        """DescribeGroups (classic groups' view) of groups coordinated by ``node``, at the
        highest version both sides speak, or at most ``max_version``."""
        request = DescribeGroupsRequest(
            groups=group_ids, include_authorized_operations=include_authorized_operations
        )
        conn = await self._core.pool.connection(node)
        version = conn.version_for(DescribeGroupsRequest.API_KEY)
        return await conn.send(request, version=version if max_version is None else min(version, max_version))

    async def _fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None,
        *,
        member: Callable[[], tuple[str, int] | None] | None = None,
        coordinator: int | None = None,
    ) -> list[tuple[TopicPartition, int, str, int]]:
        """OffsetFetch: ``(partition, offset, metadata, leader epoch)`` per partition the
        broker answered for (offset -1: nothing committed). Asks ``coordinator`` when
        given, else finds the group's coordinator."""
        wanted: dict[str, list[int]] | None = None
        if partitions is not None:
            wanted = {}
            for tp in sorted(set(partitions)):
                wanted.setdefault(tp.topic, []).append(tp.partition)

        async def attempt() -> list[tuple[TopicPartition, int, str, int]]:
            node = coordinator if coordinator is not None else await self.find_coordinator(group_id)
            conn = await self._core.pool.connection(node)
            version = min(conn.version_for(OffsetFetchRequest.API_KEY), OFFSET_FETCH_MAX)
            if version >= 8:
                identity = member() if member is not None and version >= MEMBER_FIELDS_VERSION else None
                request = OffsetFetchRequest(
                    groups=[
                        OffsetFetchRequest.OffsetFetchRequestGroup(
                            group_id=group_id,
                            member_id=None if identity is None else identity[0],
                            member_epoch=-1 if identity is None else identity[1],
                            topics=None
                            if wanted is None
                            else [
                                OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
                                for t, ps in wanted.items()
                            ],
                        )
                    ],
                    require_stable=True,
                )
                response = await conn.send(request, version=version)
                group = next((g for g in response.groups if g.group_id == group_id), None)
                if group is None:  # retried: the next answer may be a good one
                    raise error_for_code(
                        COORDINATOR_NOT_AVAILABLE,
                        f"OffsetFetch v{version} from {conn.broker}: Groups does not name group {group_id!r}",
                    )
                group_error, topics = group.error_code, group.topics
                if identity is not None and group_error in MEMBER_EPOCH_ERRORS:
                    where = f"OffsetFetch {group_id} at epoch {identity[1]} from {conn.broker}"
                    err = error_for_code(group_error, where)
                    err.retriable = True  # the next attempt asks with the member's new epoch
                    raise err
            else:
                request = OffsetFetchRequest(
                    group_id=group_id,
                    topics=None
                    if wanted is None
                    else [
                        OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                        for t, ps in wanted.items()
                    ],
                    require_stable=version >= 7,
                )
                response = await conn.send(request, version=version)
                group_error, topics = response.error_code, response.topics
            if group_error:
                raise error_for_code(group_error, f"OffsetFetch {group_id} from {conn.broker}")
            out: list[tuple[TopicPartition, int, str, int]] = []
            retry: list[KafkaError] = []
            for t in topics:
                for p in t.partitions:
                    if p.error_code:
                        where = f"OffsetFetch {t.name}-{p.partition_index} from {conn.broker}"
                        err = error_for_code(p.error_code, where)
                        if not err.retriable:
                            raise err
                        retry.append(err)
                    else:
                        tp = TopicPartition(t.name, p.partition_index)
                        out.append((tp, p.committed_offset, p.metadata or "", p.committed_leader_epoch))
            if retry:
                raise retry[0]
            return out

        return await self._retrying(f"list_consumer_group_offsets({group_id})", attempt, None)


class GroupsMixin(GroupCore):
    """Typed group methods: ``AdminClient``'s, and the consumer's offset look-ups."""

    @guarded
    async def list_consumer_groups(self, broker_ids: Sequence[int] | None = None) -> list[GroupListing]:
        """Every group known to the given brokers (default: all brokers)."""
        return [
            GroupListing(g.group_id, g.protocol_type, g.group_state or None, g.group_type or None)
            for g in await self._list_groups(broker_ids)
        ]

    @guarded
    async def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        member: Callable[[], tuple[str, int] | None] | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of ``group_id`` (all its partitions when ``partitions`` is None;
        partitions without a committed offset are left out).

        ``member`` (a consumer-protocol member's ``(member id, epoch)``, or None) is sent
        with OffsetFetch v9+, as Java's consumer does, so the broker checks the epoch."""
        return {
            tp: OffsetAndMetadata(offset, metadata, epoch)
            for tp, offset, metadata, epoch in await self._fetch_offsets(group_id, partitions, member=member)
            if offset >= 0
        }

    @guarded
    async def describe_consumer_groups(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        """Classic and consumer (KIP-848) groups alike; ``group_type`` tells them apart."""
        out: list[GroupDescription] = []
        for group_id in group_ids:

            async def attempt(group_id: str = group_id) -> GroupDescription:
                node = await self.find_coordinator(group_id)
                described = await self._describe_consumer_group(node, group_id)
                return described if described is not None else await self._describe_classic(node, group_id)

            out.append(await self._retrying(f"describe_consumer_groups({group_id})", attempt, None))
        return out

    async def _describe_consumer_group(self, node: int, group_id: str) -> GroupDescription | None:
        """ConsumerGroupDescribe; None when the group is not a consumer group (or no broker API)."""
        try:
            response = await self._core.send(node, ConsumerGroupDescribeRequest(group_ids=[group_id]))
        except UnsupportedVersionError:
            return None
        answered = [g.group_id for g in response.groups]
        check_answered(f"ConsumerGroupDescribe from node {node}", "groups", [group_id], answered)
        g = response.groups[0]
        if g.error_code in (GROUP_ID_NOT_FOUND, UNSUPPORTED_VERSION):
            return None  # UNSUPPORTED_VERSION: advertised but not run (Kafka 3.x), as Java falls back
        if g.error_code:
            raise error_for_code(g.error_code, g.error_message or f"ConsumerGroupDescribe {group_id}")
        return GroupDescription(
            group_id=g.group_id,
            state=g.group_state,
            protocol_type="consumer",
            protocol=g.assignor_name,
            group_type="consumer",
            group_epoch=g.group_epoch,
            assignment_epoch=g.assignment_epoch,
            members=tuple(
                MemberDescription(
                    m.member_id,
                    m.instance_id,
                    m.client_id,
                    m.client_host,
                    b"",
                    partitions=_described_partitions(m.assignment),
                    member_epoch=m.member_epoch,
                    target_partitions=_described_partitions(m.target_assignment),
                    subscribed_topics=tuple(m.subscribed_topic_names),
                    subscribed_topic_regex=m.subscribed_topic_regex,
                )
                for m in g.members
            ),
        )

    async def _describe_classic(self, node: int, group_id: str) -> GroupDescription:
        response = await self._describe_groups(node, [group_id], include_authorized_operations=False)
        answered = [g.group_id for g in response.groups]
        check_answered(f"DescribeGroups from node {node}", "groups", [group_id], answered)
        g = response.groups[0]
        if g.error_code:
            raise error_for_code(g.error_code, g.error_message or f"DescribeGroups {group_id}")
        return GroupDescription(
            group_id=g.group_id,
            state=g.group_state,
            protocol_type=g.protocol_type,
            protocol=g.protocol_data,
            members=tuple(
                MemberDescription(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    bytes(m.member_assignment),
                    partitions=_classic_partitions(g.protocol_type, bytes(m.member_assignment)),
                )
                for m in g.members
            ),
        )

    @guarded
    async def delete_consumer_groups(self, group_ids: Iterable[str]) -> None:
        failures: list[tuple[str, int, str | None]] = []
        for group_id in group_ids:

            async def attempt(group_id: str = group_id) -> None:
                node = await self.find_coordinator(group_id)
                response = await self._core.send(node, DeleteGroupsRequest(groups_names=[group_id]))
                answered = [r.group_id for r in response.results]
                check_answered(f"DeleteGroups from node {node}", "results", [group_id], answered)
                for r in response.results:
                    if r.error_code and error_for_code(r.error_code).retriable:
                        raise error_for_code(r.error_code, f"DeleteGroups {group_id}")
                    if r.error_code:
                        failures.append((r.group_id, r.error_code, r.error_message))

            await self._retrying(f"delete_consumer_groups({group_id})", attempt, None)
        raise_item_errors("DeleteGroups", failures)


def _described_partitions(assignment: ConsumerGroupDescribeResponse.Assignment) -> frozenset[TopicPartition]:
    return frozenset(
        TopicPartition(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions
    )


def _classic_partitions(protocol_type: str, data: bytes) -> frozenset[TopicPartition]:
    """A classic consumer group's member assignment, decoded (other group types: empty)."""
    if protocol_type != "consumer" or not data:
        return frozenset()
    try:
        _, decoded = ConsumerProtocolAssignment.decode_with_version(data)
    except DecodeError:
        return frozenset()
    return frozenset(TopicPartition(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions)
