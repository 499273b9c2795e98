"""Consumer-group administration: list, describe, delete, committed offsets.

:class:`GroupCore` sends the requests and returns what the broker said; both admin clients
build on it (FindCoordinator and OffsetFetch come from the request layer,
:mod:`aiokafka_lead.requests.groups`). :class:`GroupsMixin` (the typed ``AdminClient``)
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

from aiokafka_lead.admin.types import GroupDescription, GroupListing, MemberDescription
from aiokafka_lead.core.client import guarded
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import DecodeError, UnsupportedVersionError
from aiokafka_lead.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerProtocolAssignment,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    ShareGroupDescribeResponse,
)
from aiokafka_lead.requests.base import answer_error, check_answered, note_item_error, raise_item_errors
from aiokafka_lead.requests.groups import GroupRequests
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

#: ListGroups v5 filters by group type (KIP-848)
TYPES_FILTER_VERSION = 5


class GroupCore(GroupRequests):
    """The group requests both admin clients share."""

    async def _list_groups(
        self, broker_ids: Sequence[int] | None, *, types: list[str] | None = None
    ) -> list[Any]:
        """ListGroups of the given brokers (default: all), one entry per group; with
        ``types`` only groups of those types (ListGroups v5; a broker without group types is
        skipped: it has none of them)."""
        nodes = list(broker_ids) if broker_ids is not None else [n.node_id for n in self._core.store.nodes()]
        found: dict[str, Any] = {}
        for node_id in nodes:

            async def attempt(node_id: int = node_id) -> None:
                conn = await self._core.pool.connection(node_id)
                version = conn.version_for(ListGroupsRequest.API_KEY)
                if types is not None and version < TYPES_FILTER_VERSION:
                    return
                response = await conn.send(ListGroupsRequest(types_filter=types or []), version=version)
                if response.error_code:
                    raise answer_error(response.error_code, "ListGroups")
                for g in response.groups:
                    found[g.group_id] = g

            await self._retrying(f"ListGroups(node {node_id})", attempt, None)
        return [found[k] for k in sorted(found)]

    async def _at_coordinator(
        self, method: str, group_id: str, request: Any, handle: Callable[[int, Any], None]
    ) -> None:
        """Send ``request`` to ``group_id``'s coordinator and ``handle(node, response)``, again
        (within the request timeout) while either raises a retriable error."""

        async def attempt() -> None:
            node = await self.find_coordinator(group_id)
            handle(node, await self._core.send(node, request))

        await self._retrying(f"{method}({group_id})", attempt, None)

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

    async def _delete_groups(self, method: str, group_ids: Iterable[str]) -> None:
        """DeleteGroups of each group at its coordinator; a retriable error is retried, the
        others raised after every group was asked, naming each failed group."""
        failures: list[tuple[str, int, str | None]] = []
        for group_id in group_ids:

            def handle(node: int, response: Any, group_id: str = group_id) -> None:
                answered = [r.group_id for r in response.results]
                check_answered(f"DeleteGroups from node {node}", "results", [group_id], answered)
                for r in response.results:
                    if r.error_code:
                        note_item_error(
                            failures,
                            r.group_id,
                            r.error_code,
                            r.error_message,
                            f"DeleteGroups {group_id}",
                            name_broker=True,
                        )

            await self._at_coordinator(method, group_id, DeleteGroupsRequest(groups_names=[group_id]), handle)
        raise_item_errors("DeleteGroups", failures, broker="each group's coordinator")


class GroupsMixin(GroupCore):
    """Typed group methods (``AdminClient``'s)."""

    @guarded
    async def list_consumer_groups(self, broker_ids: Sequence[int] | None = None) -> list[GroupListing]:
        """Every group known to the given brokers (default: all brokers)."""
        return [
            GroupListing(g.group_id, g.protocol_type, g.group_state or None, g.group_type or None)
            for g in await self._list_groups(broker_ids)
        ]

    @guarded
    async def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of ``group_id`` (see ``committed_offsets``)."""
        return await self.committed_offsets(group_id, partitions)

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
        if g.error_code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION):
            return None  # UNSUPPORTED_VERSION: advertised but not run (Kafka 3.x), as Java falls back
        if g.error_code:
            raise answer_error(g.error_code, f"ConsumerGroupDescribe {group_id}", g.error_message)
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
                    partitions=described_partitions(m.assignment),
                    member_epoch=m.member_epoch,
                    target_partitions=described_partitions(m.target_assignment),
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
            raise answer_error(g.error_code, f"DescribeGroups {group_id}", g.error_message)
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
        await self._delete_groups("delete_consumer_groups", group_ids)


def described_partitions(
    assignment: ConsumerGroupDescribeResponse.Assignment | ShareGroupDescribeResponse.Assignment,
) -> frozenset[TopicPartition]:
    """A member's assignment as ConsumerGroupDescribe and ShareGroupDescribe give it."""
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
