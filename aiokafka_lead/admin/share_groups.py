"""Share-group administration (KIP-932): list, describe, delete groups; describe, alter and
delete their start offsets.

A share group keeps one start offset per partition (SPSO: below it every record is done);
``alter_share_group_offsets`` moves it (the group must be empty), ``delete_share_group_offsets``
forgets a topic's state, so the group starts it again at ``share.auto.offset.reset``.
Requests go to the group's coordinator; coordinator errors are retried as for consumer
groups (:class:`~aiokafka_lead.admin.groups.GroupCore`), per-item errors raised after the
whole request, naming every failed item.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka_lead.admin.groups import GroupCore, described_partitions
from aiokafka_lead.core.client import guarded
from aiokafka_lead.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from aiokafka_lead.requests.base import note_item_error, raise_item_errors
from aiokafka_lead.structs import TopicPartition

SHARE = "share"


@dataclass(frozen=True, slots=True)
class ShareGroupListing:
    group_id: str
    state: str


@dataclass(frozen=True, slots=True)
class ShareMemberDescription:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    member_epoch: int
    subscribed_topics: tuple[str, ...]
    assignment: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ShareMemberDescription, ...]


@dataclass(frozen=True, slots=True)
class SharePartitionOffset:
    """A share partition's start offset (-1: no state yet), its leader epoch, and its lag
    (records not yet done; -1 when the broker does not say)."""

    start_offset: int
    leader_epoch: int
    lag: int


class ShareGroupsMixin(GroupCore):
    """Share-group methods of both admin clients (typed results)."""

    @guarded
    async def list_share_groups(self, broker_ids: Sequence[int] | None = None) -> list[ShareGroupListing]:
        """Every share group the brokers coordinate (ListGroups v5, types filter "share")."""
        return [
            ShareGroupListing(g.group_id, g.group_state)
            for g in await self._list_groups(broker_ids, types=[SHARE])
            if g.group_type.lower() == SHARE
        ]

    @guarded
    async def describe_share_groups(self, group_ids: Iterable[str]) -> list[ShareGroupDescription]:
        """ShareGroupDescribe of each group; an unknown or non-share group raises
        GroupIdNotFoundError (after all were asked), naming it."""
        out: list[ShareGroupDescription] = []
        failures: list[tuple[str, int, str | None]] = []
        for group_id in group_ids:

            def handle(node: int, response: Any, group_id: str = group_id) -> None:
                for g in response.groups:
                    if g.error_code:
                        what = f"ShareGroupDescribe {group_id}"
                        note_item_error(
                            failures, g.group_id, g.error_code, g.error_message, what, name_broker=True
                        )
                    else:
                        out.append(_description(g))

            request = ShareGroupDescribeRequest(group_ids=[group_id])
            await self._at_coordinator("describe_share_groups", group_id, request, handle)
        raise_item_errors("ShareGroupDescribe", failures, broker="each group's coordinator")
        return out

    @guarded
    async def list_share_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, SharePartitionOffset]:
        """The group's start offset per partition (all the partitions it has state for, or
        ``partitions``), with the lag where the broker reports it (DescribeShareGroupOffsets)."""
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in partitions:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [
                DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestTopic(
                    topic_name=t, partitions=sorted(ps)
                )
                for t, ps in sorted(by_topic.items())
            ]
        request = DescribeShareGroupOffsetsRequest(
            groups=[
                DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(
                    group_id=group_id, topics=topics
                )
            ]
        )
        out: dict[TopicPartition, SharePartitionOffset] = {}
        failures: list[tuple[str, int, str | None]] = []

        def handle(node: int, response: Any) -> None:
            out.clear()
            failures.clear()
            for g in response.groups:
                if g.error_code:
                    what = f"DescribeShareGroupOffsets {group_id}"
                    note_item_error(failures, group_id, g.error_code, g.error_message, what)
                    continue
                for t in g.topics:
                    for p in t.partitions:
                        tp = TopicPartition(t.topic_name, p.partition_index)
                        if p.error_code:
                            failures.append((f"{tp.topic}-{tp.partition}", p.error_code, p.error_message))
                        else:
                            out[tp] = SharePartitionOffset(p.start_offset, p.leader_epoch, p.lag)

        await self._at_coordinator("list_share_group_offsets", group_id, request, handle)
        raise_item_errors("DescribeShareGroupOffsets", failures)
        return dict(sorted(out.items()))

    describe_share_group_offsets = list_share_group_offsets

    @guarded
    async def alter_share_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Set the group's start offsets (the group must have no members: NON_EMPTY_GROUP)."""
        by_topic: dict[str, list[AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestPartition]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestPartition(
                    partition_index=tp.partition, start_offset=offset
                )
            )
        request = AlterShareGroupOffsetsRequest(
            group_id=group_id,
            topics=[
                AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        await self._send_offsets_request(
            "AlterShareGroupOffsets",
            "alter_share_group_offsets",
            group_id,
            request,
            lambda response: (
                (f"{t.topic_name}-{p.partition_index}", p.error_code, p.error_message)
                for t in response.responses
                for p in t.partitions
                if p.error_code
            ),
        )

    @guarded
    async def delete_share_group_offsets(self, group_id: str, topics: Iterable[str]) -> None:
        """Forget the group's state for ``topics`` (the group must have no members)."""
        request = DeleteShareGroupOffsetsRequest(
            group_id=group_id,
            topics=[
                DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=t)
                for t in topics
            ],
        )
        await self._send_offsets_request(
            "DeleteShareGroupOffsets",
            "delete_share_group_offsets",
            group_id,
            request,
            lambda response: (
                (t.topic_name, t.error_code, t.error_message) for t in response.responses if t.error_code
            ),
        )

    async def _send_offsets_request(
        self,
        api: str,
        method: str,
        group_id: str,
        request: Any,
        item_failures: Callable[[Any], Iterable[tuple[str, int, str | None]]],
    ) -> None:
        """Send a request changing ``group_id``'s offsets to its coordinator. A retriable
        group error is retried; the group's other errors, and the failed items
        (``item_failures`` of the response), are raised after, naming each."""
        failures: list[tuple[str, int, str | None]] = []

        def handle(node: int, response: Any) -> None:
            failures.clear()
            if response.error_code:
                note_item_error(
                    failures, group_id, response.error_code, response.error_message, f"{api} {group_id}"
                )
            else:
                failures.extend(item_failures(response))

        await self._at_coordinator(method, group_id, request, handle)
        raise_item_errors(api, failures)

    @guarded
    async def delete_share_groups(self, group_ids: Iterable[str]) -> None:
        """Delete share groups (DeleteGroups; each must have no members)."""
        await self._delete_groups("delete_share_groups", group_ids)


def _description(g: ShareGroupDescribeResponse.DescribedGroup) -> ShareGroupDescription:
    return ShareGroupDescription(
        group_id=g.group_id,
        state=g.group_state,
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
        assignor=g.assignor_name,
        members=tuple(
            ShareMemberDescription(
                member_id=m.member_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                subscribed_topics=tuple(m.subscribed_topic_names),
                assignment=described_partitions(m.assignment),
            )
            for m in g.members
        ),
    )


__all__ = [
    "ShareGroupDescription",
    "ShareGroupListing",
    "ShareGroupsMixin",
    "ShareMemberDescription",
    "SharePartitionOffset",
]
