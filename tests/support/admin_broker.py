"""A one-node cluster for the admin client, on the script server, whose answers can lie.

The fake cluster does not speak the admin APIs, so :class:`AdminBroker` answers them itself
with a small consistent state (topics with their partition counts, one classic group ``g``):
Metadata (the node is broker and controller), CreateTopics, DeleteTopics, CreatePartitions,
DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, ElectLeaders, FindCoordinator,
ConsumerGroupDescribe (``g`` is a classic group: GROUP_ID_NOT_FOUND), DescribeGroups,
ListGroups, DeleteGroups, DeleteRecords and DescribeCluster.

``broker.lie(api_key, action, times)`` makes the next ``times`` answers of an API (every one
for ``None``) follow a FakeCluster interceptor action (``Rewrite`` from
:mod:`tests.support.lies`, or a wire fault from :mod:`tests.support.script_server`), so the
same lies and faults serve both.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiokafka_lead.protocol.framing import RequestHeader, encode_response
from aiokafka_lead.protocol.messages import (
    AlterConfigsRequest,
    ConsumerGroupDescribeRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    ElectLeadersRequest,
    FindCoordinatorRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    MetadataRequest,
)
from aiokafka_lead.testing.fake.broker import _garble
from aiokafka_lead.testing.fake.intercept import (
    Close,
    Corrupt,
    Drop,
    Error,
    Rewrite,
    Truncate,
    error_response,
)
from tests.support.script_server import Hangup, ScriptServer, script_server

TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION, GROUP_ID_NOT_FOUND = 36, 3, 69
ELECTION_NOT_NEEDED = 84
HOST = "127.0.0.1"


def struct_of(cls: type[Any], attr: str) -> Any:
    """The struct of ``cls``'s array (or struct) field ``attr``."""
    return next(f.struct for f in cls._FIELDS if f.attr == attr)


def new(cls: type[Any], attr: str, **values: Any) -> Any:
    """An element of ``cls``'s array (or struct) field ``attr``."""
    return struct_of(cls, attr)(**values)


@dataclass
class _Lie:
    action: Any
    remaining: int | None
    told: int = 0


@dataclass
class AdminBroker:
    """Node 1 of a one-node cluster (see the module docstring)."""

    topics: dict[str, int] = field(default_factory=lambda: {"t": 1})
    groups: set[str] = field(default_factory=lambda: {"g"})
    server: ScriptServer | None = None
    lies: dict[int, _Lie] = field(default_factory=dict)

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    def lie(self, api_key: int, action: Any, times: int | None = 1) -> _Lie:
        self.lies[api_key] = lie = _Lie(action, times)
        return lie

    def truth(self, api_key: int) -> None:
        self.lies.pop(api_key, None)

    async def handle(self, header: RequestHeader, request: Any) -> Any:
        response = self.answer(request)
        lie = self.lies.get(header.api_key)
        if lie is None:
            return response
        lie.told += 1
        if lie.remaining is not None:
            lie.remaining -= 1
            if lie.remaining <= 0:
                self.truth(header.api_key)
        return self._tell(lie.action, header, request, response)

    def _tell(self, action: Any, header: RequestHeader, request: Any, response: Any) -> Any:
        if isinstance(action, Error):
            return error_response(request, header.api_version, action.error_code)
        frame = encode_response(response, header.api_version, header.correlation_id)
        if isinstance(action, Rewrite):
            told = action.fn(response, frame)
            if told is None or isinstance(told, bytes):
                return told
            return encode_response(told, header.api_version, header.correlation_id)
        if isinstance(action, Drop):
            return None
        if isinstance(action, Truncate):
            return Hangup(frame[: action.n_bytes])
        if isinstance(action, Close):
            return Hangup()
        if isinstance(action, Corrupt):
            return _garble(frame, type(response).header_version(header.api_version))
        raise AssertionError(f"no such action: {action!r}")

    # ------------------------------------------------------------------ answers
    def answer(self, request: Any) -> Any:
        cls = type(request).RESPONSE_CLASS
        if isinstance(request, MetadataRequest):
            names = sorted(self.topics) if request.topics is None else [t.name for t in request.topics]
            return cls(
                brokers=[new(cls, "brokers", node_id=1, host=HOST, port=self.port)],
                cluster_id="hostile",
                controller_id=1,
                topics=[self._topic(cls, name) for name in names],
            )
        if isinstance(request, CreateTopicsRequest):
            results = []
            for t in request.topics:
                exists = t.name in self.topics
                if not exists and not request.validate_only:
                    self.topics[t.name] = max(t.num_partitions, 1)
                results.append(
                    new(
                        cls,
                        "topics",
                        name=t.name,
                        topic_id=_topic_id(t.name),
                        error_code=TOPIC_ALREADY_EXISTS if exists else 0,
                        num_partitions=max(t.num_partitions, 1),
                        replication_factor=1,
                    )
                )
            return cls(topics=results)
        if isinstance(request, DeleteTopicsRequest):
            names = [t.name for t in request.topics] if request.topics else list(request.topic_names)
            results = []
            for name in names:
                known = self.topics.pop(name, None) is not None
                results.append(
                    new(
                        cls,
                        "responses",
                        name=name,
                        topic_id=_topic_id(name),
                        error_code=0 if known else UNKNOWN_TOPIC_OR_PARTITION,
                    )
                )
            return cls(responses=results)
        if isinstance(request, CreatePartitionsRequest):
            for t in request.topics:
                if t.name in self.topics and not request.validate_only:
                    self.topics[t.name] = t.count
            return cls(results=[new(cls, "results", name=t.name, error_code=0) for t in request.topics])
        if isinstance(request, DescribeConfigsRequest):
            config = new(
                struct_of(cls, "results"),
                "configs",
                name="retention.ms",
                value="604800000",
                config_source=5,
                config_type=5,
            )
            return cls(
                results=[
                    new(
                        cls,
                        "results",
                        error_code=0,
                        resource_type=r.resource_type,
                        resource_name=r.resource_name,
                        configs=[config],
                    )
                    for r in request.resources
                ]
            )
        if isinstance(request, (AlterConfigsRequest, IncrementalAlterConfigsRequest)):
            return cls(
                responses=[
                    new(
                        cls,
                        "responses",
                        error_code=0,
                        resource_type=r.resource_type,
                        resource_name=r.resource_name,
                    )
                    for r in request.resources
                ]
            )
        if isinstance(request, ElectLeadersRequest):
            asked = request.topic_partitions or [
                new(type(request), "topic_partitions", topic=t, partitions=list(range(n)))
                for t, n in self.topics.items()
            ]
            result = struct_of(cls, "replica_election_results")
            return cls(
                replica_election_results=[
                    new(
                        cls,
                        "replica_election_results",
                        topic=tp.topic,
                        partition_result=[
                            new(result, "partition_result", partition_id=p, error_code=ELECTION_NOT_NEEDED)
                            for p in tp.partitions
                        ],
                    )
                    for tp in asked
                ]
            )
        if isinstance(request, FindCoordinatorRequest):
            keys = list(request.coordinator_keys) or [request.key]
            if not request.coordinator_keys:  # before v4: one key, answered at the top level
                return cls(node_id=1, host=HOST, port=self.port)
            return cls(
                coordinators=[
                    new(cls, "coordinators", key=k, node_id=1, host=HOST, port=self.port) for k in keys
                ]
            )
        if isinstance(request, ConsumerGroupDescribeRequest):
            return cls(
                groups=[
                    new(cls, "groups", group_id=g, error_code=GROUP_ID_NOT_FOUND) for g in request.group_ids
                ]
            )
        if isinstance(request, DescribeGroupsRequest):
            member = new(
                struct_of(cls, "groups"),
                "members",
                member_id="m-1",
                client_id="c",
                client_host="/127.0.0.1",
                member_metadata=b"",
                member_assignment=b"",
            )
            return cls(
                groups=[
                    new(
                        cls,
                        "groups",
                        group_id=g,
                        group_state="Stable",
                        protocol_type="consumer",
                        protocol_data="range",
                        members=[member] if g in self.groups else [],
                    )
                    for g in request.groups
                ]
            )
        if isinstance(request, ListGroupsRequest):
            return cls(
                groups=[
                    new(
                        cls,
                        "groups",
                        group_id=g,
                        protocol_type="consumer",
                        group_state="Stable",
                        group_type="classic",
                    )
                    for g in sorted(self.groups)
                ]
            )
        if isinstance(request, DeleteGroupsRequest):
            results = []
            for g in request.groups_names:
                known = g in self.groups
                self.groups.discard(g)
                results.append(new(cls, "results", group_id=g, error_code=0 if known else GROUP_ID_NOT_FOUND))
            return cls(results=results)
        if isinstance(request, DeleteRecordsRequest):
            topic = struct_of(cls, "topics")
            return cls(
                topics=[
                    new(
                        cls,
                        "topics",
                        name=t.name,
                        partitions=[
                            new(
                                topic, "partitions", partition_index=p.partition_index, low_watermark=p.offset
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ]
            )
        if isinstance(request, DescribeClusterRequest):
            return cls(
                cluster_id="hostile",
                controller_id=1,
                brokers=[new(cls, "brokers", broker_id=1, host=HOST, port=self.port)],
            )
        raise AssertionError(f"the admin broker does not answer {type(request).__name__}")

    def _topic(self, cls: type[Any], name: str) -> Any:
        count = self.topics.get(name)
        if count is None:
            return new(cls, "topics", name=name, error_code=UNKNOWN_TOPIC_OR_PARTITION)
        topic = struct_of(cls, "topics")
        partitions = [
            new(
                topic,
                "partitions",
                partition_index=p,
                leader_id=1,
                leader_epoch=0,
                replica_nodes=[1],
                isr_nodes=[1],
            )
            for p in range(count)
        ]
        return new(cls, "topics", name=name, topic_id=_topic_id(name), partitions=partitions)


def _topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


@asynccontextmanager
async def admin_broker(**state: Any) -> AsyncIterator[AdminBroker]:
    broker = AdminBroker(**state)
    async with script_server(broker.handle) as server:
        broker.server = server
        yield broker
