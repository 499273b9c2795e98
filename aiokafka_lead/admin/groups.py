"""Consumer-group administration: list, describe, delete, committed offsets.

Group requests go to the group's coordinator (FindCoordinator). COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS are retriable: the coordinator is looked
up again on the next attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from aiokafka_lead.admin.base import AdminBase, raise_item_errors
from aiokafka_lead.admin.types import GroupDescription, GroupListing, MemberDescription
from aiokafka_lead.client import guarded
from aiokafka_lead.errors import KafkaError, error_for_code
from aiokafka_lead.protocol.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    OffsetFetchRequest,
)
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

GROUP_KEY = 0
# OffsetFetch v10 names topics by id only; v8-9 carry names and several groups per request.
OFFSET_FETCH_MAX = 9


class GroupsMixin(AdminBase):
    @guarded
    async def find_coordinator(self, group_id: str, key_type: int = GROUP_KEY) -> int:
        """The node id of ``group_id``'s coordinator (retrying until it is available)."""

        async def attempt() -> int:
            conn = await self._core.any_connection()
            version = conn.version_for(FindCoordinatorRequest.API_KEY)
            if version >= 4:
                request = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[group_id])
                response = await conn.send(request, version=version)
                entry = response.coordinators[0]
                code, node_id = entry.error_code, entry.node_id
                message = entry.error_message
            else:
                request = FindCoordinatorRequest(key=group_id, key_type=key_type)
                response = await conn.send(request, version=version)
                code, node_id, message = (
                    response.error_code,
                    response.node_id,
                    response.error_message,
                )
            if code:
                raise error_for_code(code, message or f"FindCoordinator {group_id}")
            if self._core.store.node(node_id) is None:
                await self._core.refresh_metadata(f"coordinator {node_id} unknown")
            return int(node_id)

        return await self._retrying(f"find_coordinator({group_id})", attempt, None)

    @guarded
    async def list_consumer_groups(self, broker_ids: Sequence[int] | None = None) -> list[GroupListing]:
        """Every group known to the given brokers (default: all brokers)."""
        nodes = list(broker_ids) if broker_ids is not None else [n.node_id for n in self._core.store.nodes()]
        found: dict[str, GroupListing] = {}
        for node_id in nodes:

            async def attempt(node_id: int = node_id) -> None:
                response = await self._core.send(node_id, ListGroupsRequest())
                if response.error_code:
                    raise error_for_code(response.error_code, f"ListGroups on node {node_id}")
                for g in response.groups:
                    found[g.group_id] = GroupListing(
                        g.group_id, g.protocol_type, g.group_state or None, g.group_type or None
                    )

            await self._retrying(f"list_consumer_groups(node {node_id})", attempt, None)
        return [found[k] for k in sorted(found)]

    @guarded
    async def describe_consumer_groups(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        out: list[GroupDescription] = []
        for group_id in group_ids:

            async def attempt(group_id: str = group_id) -> GroupDescription:
                node = await self.find_coordinator(group_id)
                response = await self._core.send(node, DescribeGroupsRequest(groups=[group_id]))
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
                        )
                        for m in g.members
                    ),
                )

            out.append(await self._retrying(f"describe_consumer_groups({group_id})", attempt, None))
        return out

    @guarded
    async def delete_consumer_groups(self, group_ids: Iterable[str]) -> None:
        failures: list[tuple[str, int, str | None]] = []
        for group_id in group_ids:

            async def attempt(group_id: str = group_id) -> None:
                node = await self.find_coordinator(group_id)
                response = await self._core.send(node, DeleteGroupsRequest(groups_names=[group_id]))
                for r in response.results:
                    if r.error_code and error_for_code(r.error_code).retriable:
                        raise error_for_code(r.error_code, f"DeleteGroups {group_id}")
                    if r.error_code:
                        failures.append((r.group_id, r.error_code, None))

            await self._retrying(f"delete_consumer_groups({group_id})", attempt, None)
        raise_item_errors("DeleteGroups", failures)

    @guarded
    async def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of ``group_id`` (all its partitions when ``partitions`` is None)."""
        wanted: dict[str, list[int]] | None = None
        if partitions is not None:
            wanted = {}
            for tp in sorted(set(partitions)):
                wanted.setdefault(tp.topic, []).append(tp.partition)

        async def attempt() -> dict[TopicPartition, OffsetAndMetadata]:
            node = await self.find_coordinator(group_id)
            conn = await self._core.pool.connection(node)
            version = min(conn.version_for(OffsetFetchRequest.API_KEY), OFFSET_FETCH_MAX)
            if version >= 8:
                request = OffsetFetchRequest(
                    groups=[
                        OffsetFetchRequest.OffsetFetchRequestGroup(
                            group_id=group_id,
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
                group = response.groups[0]
                group_error, topics = group.error_code, group.topics
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
                raise error_for_code(group_error, f"OffsetFetch {group_id}")
            out: dict[TopicPartition, OffsetAndMetadata] = {}
            retry: list[KafkaError] = []
            for t in topics:
                for p in t.partitions:
                    if p.error_code:
                        err = error_for_code(p.error_code, f"OffsetFetch {t.name}-{p.partition_index}")
                        if not err.retriable:
                            raise err
                        retry.append(err)
                    elif p.committed_offset >= 0:
                        out[TopicPartition(t.name, p.partition_index)] = OffsetAndMetadata(
                            p.committed_offset, p.metadata or "", p.committed_leader_epoch
                        )
            if retry:
                raise retry[0]
            return out

        return await self._retrying(f"list_consumer_group_offsets({group_id})", attempt, None)
