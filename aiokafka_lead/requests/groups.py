"""Requests to a consumer group's coordinator that the clients share: FindCoordinator (for
groups and transactional ids) and OffsetFetch (committed offsets).

COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS are retriable:
the coordinator is looked up again on the next attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from aiokafka_lead.core.client import guarded
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaError, error_for_code
from aiokafka_lead.metadata.checks import node_problem
from aiokafka_lead.protocol.messages import FindCoordinatorRequest, OffsetFetchRequest
from aiokafka_lead.requests.base import RequestBase
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

GROUP_KEY = 0
#: OffsetFetch v9 (KIP-848) checks a member's id and epoch: these answers mean the member's
#: epoch moved on (or it was fenced) and are retried with its identity of the moment
MEMBER_EPOCH_ERRORS = frozenset(
    {
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.FENCED_MEMBER_EPOCH,
        ErrorCode.STALE_MEMBER_EPOCH,
    }
)
MEMBER_FIELDS_VERSION = 9
# OffsetFetch v10 names topics by id only; v8-9 carry names and several groups per request.
OFFSET_FETCH_MAX = 9


class GroupRequests(RequestBase):
    """FindCoordinator and OffsetFetch."""

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
                        ErrorCode.COORDINATOR_NOT_AVAILABLE,
                        f"{source}: Coordinators does not name key {group_id!r}",
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
                raise error_for_code(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{source}: {problem}")
            if self._core.store.node(node_id) is None:
                await self._core.refresh_metadata(f"coordinator {node_id} unknown")
            return int(node_id)

        return await self._retrying(f"FindCoordinator({group_id})", attempt, None)

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
                        ErrorCode.COORDINATOR_NOT_AVAILABLE,
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

    async def committed_offsets(
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


__all__ = ["GROUP_KEY", "GroupRequests"]
