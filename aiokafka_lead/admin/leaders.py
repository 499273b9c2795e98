"""Leader elections (KIP-183, KIP-460) and partition reassignments (KIP-455).

Reordering a partition's replicas and then running a preferred election is how tests
and benchmarks move leadership on purpose: the first replica is the preferred leader.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from aiokafka_lead.admin.types import ElectionResult, ElectionType, PartitionReassignment
from aiokafka_lead.core.client import guarded
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.mappings import group_by_topic
from aiokafka_lead.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)
from aiokafka_lead.requests.base import RequestBase, answer_error, check_answered, raise_item_errors
from aiokafka_lead.structs import TopicPartition


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Each topic's partition indexes, sorted, each once."""
    return group_by_topic((tp, tp.partition) for tp in sorted(set(partitions)))


def election_type_of(value: ElectionType | str | int) -> ElectionType:
    if isinstance(value, str):
        try:
            return ElectionType[value.upper()]
        except KeyError:
            raise ValueError(f"election_type must be 'preferred' or 'unclean', not {value!r}") from None
    return ElectionType(value)


class LeadersMixin(RequestBase):
    @guarded
    async def elect_leaders(
        self,
        election_type: ElectionType | str = ElectionType.PREFERRED,
        partitions: Iterable[TopicPartition] | None = None,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, ElectionResult]:
        """Elect the preferred (or, unclean, any) replica as leader (ElectLeaders).

        ``partitions=None`` means every partition. The result maps each partition to its
        outcome; ELECTION_NOT_NEEDED counts as success (``result.ok``). NOT_CONTROLLER is
        retried. Metadata is refreshed afterwards so this client sees the new leaders.
        """
        kind = election_type_of(election_type)
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms
        request = ElectLeadersRequest(
            election_type=int(kind),
            topic_partitions=None
            if partitions is None
            else [
                ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps)
                for t, ps in _by_topic(partitions).items()
            ],
            timeout_ms=timeout,
        )

        asked = set(partitions or ())

        async def attempt() -> dict[TopicPartition, ElectionResult]:
            response = await self._send_to_controller(request)
            if response.error_code:
                raise answer_error(response.error_code, "ElectLeaders")
            results = {
                TopicPartition(r.topic, p.partition_id): ElectionResult(
                    TopicPartition(r.topic, p.partition_id), p.error_code, p.error_message
                )
                for r in response.replica_election_results
                for p in r.partition_result
            }
            if any(res.error_code == ErrorCode.NOT_CONTROLLER for res in results.values()):
                raise answer_error(ErrorCode.NOT_CONTROLLER, "ElectLeaders")
            if partitions is not None:
                what = f"ElectLeaders from {self.answered_by}"
                check_answered(what, "replica_election_results", asked, results)
            return results

        results = await self._retrying("elect_leaders", attempt, timeout + self._request_timeout_ms)
        await self._core.refresh_metadata("leaders elected")
        return results

    @guarded
    async def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        timeout_ms: int | None = None,
    ) -> None:
        """Set each partition's replica list (order = preference); None cancels a reassignment."""
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms
        topics: dict[str, list[AlterPartitionReassignmentsRequest.ReassignablePartition]] = {}
        for tp, replicas in sorted(reassignments.items()):
            topics.setdefault(tp.topic, []).append(
                AlterPartitionReassignmentsRequest.ReassignablePartition(
                    partition_index=tp.partition,
                    replicas=None if replicas is None else list(replicas),
                )
            )
        request = AlterPartitionReassignmentsRequest(
            timeout_ms=timeout,
            topics=[
                AlterPartitionReassignmentsRequest.ReassignableTopic(name=name, partitions=parts)
                for name, parts in topics.items()
            ],
        )

        async def attempt() -> None:
            response = await self._send_to_controller(request)
            if response.error_code:
                raise answer_error(response.error_code, "AlterPartitionReassignments", response.error_message)
            raise_item_errors(
                "AlterPartitionReassignments",
                [
                    (f"{t.name}-{p.partition_index}", p.error_code, p.error_message)
                    for t in response.responses
                    for p in t.partitions
                    if p.error_code
                ],
            )

        await self._retrying("alter_partition_reassignments", attempt, timeout + self._request_timeout_ms)

    @guarded
    async def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, timeout_ms: int | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        """Reassignments in progress (all when ``partitions`` is None)."""
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms
        request = ListPartitionReassignmentsRequest(
            timeout_ms=timeout,
            topics=None
            if partitions is None
            else [
                ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(
                    name=t, partition_indexes=ps
                )
                for t, ps in _by_topic(partitions).items()
            ],
        )

        async def attempt() -> dict[TopicPartition, PartitionReassignment]:
            response = await self._send_to_controller(request)
            if response.error_code:
                raise answer_error(response.error_code, "ListPartitionReassignments", response.error_message)
            return {
                TopicPartition(t.name, p.partition_index): PartitionReassignment(
                    tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas)
                )
                for t in response.topics
                for p in t.partitions
            }

        return await self._retrying(
            "list_partition_reassignments", attempt, timeout + self._request_timeout_ms
        )
