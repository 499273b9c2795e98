"""The two admin clients: ``AdminClient`` (typed results) and ``AIOKafkaAdminClient``
(aiokafka's results), over one implementation.

Topics live in :mod:`.topics`, configs in :mod:`.configs`, groups in :mod:`.groups`,
elections and reassignments in :mod:`.leaders`, offsets and record deletion in
:mod:`.offsets`. Each of the first three is a core (the requests, per-item outcomes,
retries, propagation waits) that both clients share, plus the typed methods:

* ``AdminClient`` returns value types (``TopicDescription``, ``ConfigEntry``,
  ``GroupListing``, ...) and raises a per-item broker error as that error's class (after
  the whole request completed), naming every failed item. The CLI, the test harness, the
  Spark source and the benchmarks use it.
* ``AIOKafkaAdminClient`` returns what aiokafka's does: its protocol responses
  (:mod:`.responses`: ``create_topics(...).topic_errors`` rows of ``(topic, error_code,
  error_message)``, per-item errors as codes, not raised), ``describe_topics`` and
  ``describe_cluster`` as dicts, ``list_consumer_groups`` as ``(group, protocol_type)``
  tuples, and raises where aiokafka raises (``create_partitions``, ``delete_records``).
  Its ``alter_configs`` is AlterConfigs (the whole configuration), as aiokafka's.

Both retry retriable errors within ``timeout_ms`` (default request_timeout_ms) through
:func:`call_with_retries`, and both wait for created / deleted topics to reach every broker.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Self

from aiokafka_lead.admin import responses as r
from aiokafka_lead.admin.config import AdminConfig
from aiokafka_lead.admin.configs import ConfigsCore, ConfigsMixin
from aiokafka_lead.admin.groups import GroupCore, GroupsMixin
from aiokafka_lead.admin.keywords import AdminKeywords
from aiokafka_lead.admin.leaders import LeadersMixin
from aiokafka_lead.admin.offsets import OffsetsMixin
from aiokafka_lead.admin.share_groups import ShareGroupsMixin
from aiokafka_lead.admin.topics import TopicsCore, TopicsMixin
from aiokafka_lead.admin.types import ConfigResource, NewPartitions, NewTopic
from aiokafka_lead.core.client import ClientCore, guarded
from aiokafka_lead.core.telemetry_api import TelemetryAPI
from aiokafka_lead.errors import KafkaError, NotLeaderOrFollowerError, error_for_code
from aiokafka_lead.metadata.decode import topics_from_response
from aiokafka_lead.metadata.model import TopicMetadata
from aiokafka_lead.requests.base import RequestBase
from aiokafka_lead.runtime import ExitOnLeave
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition


class AdminClientBase(AdminKeywords, RequestBase, TelemetryAPI, ExitOnLeave):
    """The lifecycle both clients share (their constructor keywords: ``AdminKeywords``,
    generated from ``AdminConfig``)."""

    def _configure(self, config: AdminConfig) -> None:
        RequestBase.__init__(self, ClientCore(type(self).__name__, config))

    async def start(self) -> None:
        await self._core.start()

    async def close(self) -> None:
        await self._core.close()

    async def __aenter__(self) -> Self:
        await self._core.enter()
        return self

    async def _exit(self, exc: BaseException | None) -> None:
        await self.close()


class AdminClient(
    TopicsMixin, ConfigsMixin, GroupsMixin, ShareGroupsMixin, LeadersMixin, OffsetsMixin, AdminClientBase
):
    """Asyncio Kafka admin client with typed results (see the module docstring)."""


#: DescribeGroups v6 answers an unknown group with GROUP_ID_NOT_FOUND; before, with error 0
#: and state "Dead", which is what aiokafka's callers see
DESCRIBE_GROUPS_AIOKAFKA = 5


def _topic_dict(t: TopicMetadata) -> dict[str, Any]:
    """A topic's metadata as aiokafka's ``describe_topics`` gives it."""
    return {
        "error_code": t.error_code,
        "topic": t.name,
        "is_internal": t.is_internal,
        "partitions": [
            {
                "error_code": p.error_code,
                "partition": p.partition,
                "leader": p.leader_id,
                "replicas": list(p.replica_nodes),
                "isr": list(p.isr_nodes),
                "offline_replicas": list(p.offline_replicas),
            }
            for p in sorted(t.partitions, key=lambda p: p.partition)
        ],
    }


class AIOKafkaAdminClient(
    TopicsCore, ConfigsCore, ShareGroupsMixin, GroupCore, LeadersMixin, OffsetsMixin, AdminClientBase
):
    """Asyncio Kafka admin client returning what aiokafka's ``AIOKafkaAdminClient`` returns
    (see the module docstring); ``elect_leaders``, ``list_offsets`` and the reassignment
    methods, which aiokafka lacks, are the typed client's."""

    def __init__(self, *, loop: Any = None, api_version: str | None = None, **kwargs: Any) -> None:
        del loop  # accepted, as aiokafka's admin does; the running loop is always used
        if api_version is not None:
            warnings.warn(
                "The `api_version` parameter is a no-op: versions are negotiated per broker",
                DeprecationWarning,
                stacklevel=2,
            )
        super().__init__(**kwargs)

    # -------------------------------------------------------------------- topics
    @guarded
    async def create_topics(
        self, new_topics: Iterable[NewTopic], timeout_ms: int | None = None, validate_only: bool = False
    ) -> r.CreateTopicsResponse:
        """Each topic's outcome in ``.topic_errors``: ``(topic, error_code, error_message)``."""
        outcomes = await self._create_topics(new_topics, timeout_ms, validate_only)
        return r.CreateTopicsResponse(0, [r.TopicError(*o) for o in outcomes])

    @guarded
    async def delete_topics(
        self, topics: Iterable[str], timeout_ms: int | None = None
    ) -> r.DeleteTopicsResponse:
        """Each topic's outcome in ``.topic_error_codes``: ``(topic, error_code)``."""
        outcomes = await self._delete_topics(topics, timeout_ms)
        return r.DeleteTopicsResponse(0, [r.TopicErrorCode(name, code) for name, code, _ in outcomes])

    @guarded
    async def describe_topics(self, topics: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Metadata of the topics (all when None) as dicts; an unknown topic is an entry
        with its error code (no topic is created by asking)."""
        return [_topic_dict(t) for t in topics_from_response(await self._metadata(topics))]

    @guarded
    async def describe_cluster(self) -> dict[str, Any]:
        cluster = await self._describe_cluster()
        return {
            "throttle_time_ms": 0,
            "brokers": [
                {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                for b in cluster.brokers
            ],
            "cluster_id": cluster.cluster_id,
            "controller_id": cluster.controller_id,
        }

    @guarded
    async def create_partitions(
        self,
        topic_partitions: dict[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> r.CreatePartitionsResponse:
        """Raises the first failed topic's error class (as aiokafka); else the response."""
        outcomes = await self._create_partitions(topic_partitions, timeout_ms, validate_only)
        for topic, code, message in outcomes:
            if code:
                raise error_for_code(code, f"Could not create partitions for {topic}: {message}")
        return r.CreatePartitionsResponse(0, [r.TopicError(*o) for o in outcomes])

    # ------------------------------------------------------------------- configs
    @guarded
    async def describe_configs(
        self, config_resources: Sequence[ConfigResource], include_synonyms: bool = False
    ) -> list[r.DescribeConfigsResponse]:
        """One response per broker asked (broker resources), then one for the rest;
        ``.resources`` rows carry each resource's error code (not raised)."""
        return [
            r.DescribeConfigsResponse(
                response.throttle_time_ms,
                [
                    r.DescribedResource(
                        res.error_code,
                        res.error_message if res.error_message is not None or res.error_code else "",
                        res.resource_type,
                        res.resource_name,
                        [
                            r.DescribedConfig(
                                c.name,
                                c.value,
                                c.read_only,
                                c.config_source,
                                c.is_sensitive,
                                [r.ConfigSynonym(s.name, s.value, s.source) for s in c.synonyms],
                            )
                            for c in res.configs
                        ],
                    )
                    for res in response.results
                ],
            )
            for _, response in await self._describe_configs(config_resources, include_synonyms)
        ]

    @guarded
    async def alter_configs(self, config_resources: Sequence[ConfigResource]) -> list[r.AlterConfigsResponse]:
        """AlterConfigs, as aiokafka: each resource's configuration becomes the keys given
        (the others return to their defaults). One response for the non-broker
        resources, then one per broker; errors are codes in ``.resources`` rows."""
        return [
            r.AlterConfigsResponse(
                response.throttle_time_ms,
                [
                    r.AlteredResource(res.error_code, res.error_message, res.resource_type, res.resource_name)
                    for res in response.responses
                ],
            )
            for response in await self._alter_configs_whole(config_resources)
        ]

    # -------------------------------------------------------------------- groups
    @guarded
    async def list_consumer_groups(self, broker_ids: Sequence[int] | None = None) -> list[tuple[str, str]]:
        """``(group_id, protocol_type)`` of every group the brokers know."""
        return [(g.group_id, g.protocol_type) for g in await self._list_groups(broker_ids)]

    @guarded
    async def describe_consumer_groups(
        self,
        group_ids: Iterable[str],
        group_coordinator_id: int | None = None,
        include_authorized_operations: bool = False,
    ) -> list[r.DescribeGroupsResponse]:
        """One DescribeGroups response per coordinator; a group's error is its row's code."""
        by_node: dict[int, list[str]] = {}
        for group_id in group_ids:
            node = (
                group_coordinator_id
                if group_coordinator_id is not None
                else await self.find_coordinator(group_id)
            )
            by_node.setdefault(node, []).append(group_id)
        out = []
        for node, groups in by_node.items():

            async def attempt(node: int = node, groups: list[str] = groups) -> Any:
                return await self._describe_groups(
                    node, groups, include_authorized_operations, max_version=DESCRIBE_GROUPS_AIOKAFKA
                )

            response = await self._retrying("describe_consumer_groups", attempt, None)
            out.append(
                r.DescribeGroupsResponse(
                    response.throttle_time_ms,
                    [
                        r.DescribedGroup(
                            g.error_code,
                            g.group_id,
                            g.group_state,
                            g.protocol_type,
                            g.protocol_data,
                            [
                                r.GroupMember(
                                    m.member_id,
                                    m.client_id,
                                    m.client_host,
                                    bytes(m.member_metadata),
                                    bytes(m.member_assignment),
                                )
                                for m in g.members
                            ],
                        )
                        for g in response.groups
                    ],
                )
            )
        return out

    @guarded
    async def list_consumer_group_offsets(
        self,
        group_id: str,
        group_coordinator_id: int | None = None,
        partitions: Iterable[TopicPartition] | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of ``group_id``; a partition asked for explicitly that has
        none gets offset -1 (as aiokafka)."""
        rows = await self._fetch_offsets(group_id, partitions or None, coordinator=group_coordinator_id)
        return {tp: OffsetAndMetadata(offset, metadata) for tp, offset, metadata, _ in rows}

    # ------------------------------------------------------------------- records
    async def _check_deletable(self, partitions: Iterable[TopicPartition]) -> None:
        """``delete_records``: a partition the cluster does not have (after a metadata
        refresh) raises NotLeaderForPartitionError at once, as aiokafka's."""
        await self._core.refresh_metadata("delete_records")
        store = self._core.store
        unknown = [
            tp for tp in partitions if tp.partition not in (store.partitions_for_topic(tp.topic) or ())
        ]
        if unknown:
            raise NotLeaderOrFollowerError(
                f"delete_records: no such partition(s) in the cluster: {unknown[:5]}"
            )


__all__ = ["AIOKafkaAdminClient", "AdminClient", "AdminClientBase", "KafkaError"]
