"""AIOKafkaAdminClient: topics, partitions, cluster and configs.

Leader elections and reassignments live in :mod:`.leaders`, offsets and record deletion
in :mod:`.offsets`, consumer groups in :mod:`.groups`; this class mixes them in so the
public surface matches aiokafka's single admin class.

Errors: a per-item broker error raises that error's class (after the whole request has
completed), with every failed item named in the message. Retriable errors are retried
within ``timeout_ms`` (default request_timeout_ms) through :func:`call_with_retries`.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Self

import anyio

from aiokafka_lead.admin.base import NOT_CONTROLLER, AdminBase, raise_item_errors
from aiokafka_lead.admin.groups import GroupsMixin
from aiokafka_lead.admin.leaders import LeadersMixin
from aiokafka_lead.admin.offsets import OffsetsMixin
from aiokafka_lead.admin.types import (
    AlterConfigOp,
    BrokerDescription,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    PartitionDescription,
    TopicDescription,
)
from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.client import ClientCore, connection_config, guarded
from aiokafka_lead.errors import (
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from aiokafka_lead.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
)
from aiokafka_lead.validation import options_of, validate_options

UNKNOWN_TOPIC = UnknownTopicOrPartitionError.errno
log = logging.getLogger(__name__)


def _ready(topic: Any, partitions: int) -> bool:
    """A created topic is usable: no error, every partition present and led."""
    return (
        topic.error_code == 0
        and (partitions < 0 or len(topic.partitions) >= partitions)
        and len(topic.partitions) > 0
        and all(p.leader_id >= 0 for p in topic.partitions)
    )


class AIOKafkaAdminClient(GroupsMixin, LeadersMixin, OffsetsMixin, AdminBase):
    """Asyncio Kafka admin client, with aiokafka's constructor keywords and method names."""

    def __init__(
        self,
        *,
        bootstrap_servers: str | Sequence[str] = "localhost",
        client_id: str = "aiokafka-lead-admin",
        request_timeout_ms: int = 40_000,
        connections_max_idle_ms: int = 540_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        metadata_max_age_ms: int = 300_000,
        security_protocol: str = "PLAINTEXT",
        ssl_context: ssl.SSLContext | None = None,
        api_version: str = "auto",
        sasl_mechanism: str = "PLAIN",
        sasl_plain_username: str | None = None,
        sasl_plain_password: str | None = None,
        **unsupported: Any,
    ) -> None:
        validate_options("admin client", options_of(locals()), unsupported)
        del api_version  # versions are always negotiated
        self._request_timeout_ms = request_timeout_ms
        self._backoff = ExponentialBackoff(retry_backoff_ms, max(retry_backoff_max_ms, retry_backoff_ms))
        self._core = ClientCore(
            "AIOKafkaAdminClient",
            bootstrap_servers=bootstrap_servers,
            config=connection_config(
                client_id=client_id,
                request_timeout_ms=request_timeout_ms,
                security_protocol=security_protocol,
                ssl_context=ssl_context,
                sasl_mechanism=sasl_mechanism,
                sasl_plain_username=sasl_plain_username,
                sasl_plain_password=sasl_plain_password,
                connections_max_idle_ms=connections_max_idle_ms,
            ),
            metadata_max_age_ms=metadata_max_age_ms,
            retry_backoff_ms=retry_backoff_ms,
            retry_backoff_max_ms=retry_backoff_max_ms,
        )

    # ----------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        await self._core.start()

    async def close(self) -> None:
        await self._core.close()

    async def __aenter__(self) -> Self:
        await self._core.enter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -------------------------------------------------------------------- topics
    @guarded
    async def create_topics(
        self,
        new_topics: Iterable[NewTopic],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        """Create topics; raises TopicAlreadyExistsError etc. naming each failed topic."""
        topics = list(new_topics)
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms
        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=t.name,
                    num_partitions=t.num_partitions if not t.replica_assignments else -1,
                    replication_factor=t.replication_factor if not t.replica_assignments else -1,
                    assignments=[
                        CreateTopicsRequest.CreatableReplicaAssignment(partition_index=p, broker_ids=list(b))
                        for p, b in sorted((t.replica_assignments or {}).items())
                    ],
                    configs=[
                        CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                        for k, v in sorted((t.topic_configs or {}).items())
                    ],
                )
                for t in topics
            ],
            timeout_ms=timeout,
            validate_only=validate_only,
        )

        async def attempt() -> None:
            response = await self._send_to_controller(request)
            if any(r.error_code == NOT_CONTROLLER for r in response.topics):
                raise error_for_code(NOT_CONTROLLER, "CreateTopics")
            raise_item_errors(
                "CreateTopics",
                [(r.name, r.error_code, r.error_message) for r in response.topics if r.error_code],
            )
            answered = {r.name for r in response.topics}
            unanswered = [t.name for t in topics if t.name not in answered]
            if unanswered:  # whether they were created is unknown: not a success, not retried
                raise KafkaProtocolError(
                    f"CreateTopics: the controller's answer has no result for topic(s) {unanswered} "
                    f"(it names {sorted(answered)}); whether they were created is unknown"
                )

        await self._retrying("create_topics", attempt, timeout + self._request_timeout_ms)
        if not validate_only:
            wanted = {t.name: t.num_partitions for t in topics}
            await self._await_propagation(
                "create_topics", list(wanted), lambda t: _ready(t, wanted[t.name]), timeout
            )
            absent = [name for name in wanted if self._core.store.partitions_for_topic(name) is None]
            if absent:
                raise KafkaTimeoutError(
                    f"create_topics: the controller reported {absent} created, but the brokers' "
                    f"metadata still does not show them after {timeout} ms"
                )

    @guarded
    async def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None) -> None:
        names = list(topics)
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms

        async def attempt() -> None:
            conn = await self._core.any_connection()
            version = conn.version_for(DeleteTopicsRequest.API_KEY)
            if version >= 6:
                request = DeleteTopicsRequest(
                    topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in names],
                    timeout_ms=timeout,
                )
            else:
                request = DeleteTopicsRequest(topic_names=names, timeout_ms=timeout)
            response = await conn.send(request, version=version)
            if any(r.error_code == NOT_CONTROLLER for r in response.responses):
                raise error_for_code(NOT_CONTROLLER, "DeleteTopics")
            raise_item_errors(
                "DeleteTopics",
                [
                    (r.name or str(r.topic_id), r.error_code, r.error_message)
                    for r in response.responses
                    if r.error_code
                ],
            )

        await self._retrying("delete_topics", attempt, timeout + self._request_timeout_ms)
        await self._await_propagation(
            "delete_topics", names, lambda t: t.error_code == UNKNOWN_TOPIC, timeout
        )

    async def _metadata(self, topics: Sequence[str] | None) -> Any:
        request = MetadataRequest(
            topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        return await self._send_any(request)

    @guarded
    async def list_topics(self) -> list[str]:
        response = await self._retrying("list_topics", lambda: self._metadata(None), None)
        return sorted(t.name for t in response.topics if t.name and not t.error_code)

    @guarded
    async def describe_topics(self, topics: Sequence[str] | None = None) -> list[TopicDescription]:
        """Describe topics (all when None); unknown topics raise UnknownTopicOrPartitionError."""
        response = await self._retrying("describe_topics", lambda: self._metadata(topics), None)
        raise_item_errors(
            "describe_topics",
            [(t.name, t.error_code, None) for t in response.topics if t.error_code],
        )
        return [
            TopicDescription(
                name=t.name,
                topic_id=t.topic_id,
                is_internal=t.is_internal,
                partitions=tuple(
                    PartitionDescription(
                        partition=p.partition_index,
                        leader=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replicas=tuple(p.replica_nodes),
                        isr=tuple(p.isr_nodes),
                        offline_replicas=tuple(p.offline_replicas),
                    )
                    for p in sorted(t.partitions, key=lambda p: p.partition_index)
                ),
            )
            for t in sorted(response.topics, key=lambda t: t.name)
        ]

    @guarded
    async def create_partitions(
        self,
        topic_partitions: dict[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms
        request = CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequest.CreatePartitionsTopic(
                    name=name,
                    count=np.total_count,
                    assignments=None
                    if np.new_assignments is None
                    else [
                        CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=list(a))
                        for a in np.new_assignments
                    ],
                )
                for name, np in sorted(topic_partitions.items())
            ],
            timeout_ms=timeout,
            validate_only=validate_only,
        )

        async def attempt() -> None:
            response = await self._send_to_controller(request)
            if any(r.error_code == NOT_CONTROLLER for r in response.results):
                raise error_for_code(NOT_CONTROLLER, "CreatePartitions")
            raise_item_errors(
                "CreatePartitions",
                [(r.name, r.error_code, r.error_message) for r in response.results if r.error_code],
            )

        await self._retrying("create_partitions", attempt, timeout + self._request_timeout_ms)
        if not validate_only:
            counts = {name: np.total_count for name, np in topic_partitions.items()}
            await self._await_propagation(
                "create_partitions", list(counts), lambda t: _ready(t, counts[t.name]), timeout
            )

    async def _await_propagation(
        self, what: str, topics: list[str], done: Callable[[Any], bool], timeout_ms: float
    ) -> None:
        """Wait until EVERY broker's metadata shows the change (KRaft brokers learn it
        asynchronously), so the caller can use the topic on any broker at once. Bounded by
        ``timeout_ms``; the change itself has already succeeded, so running out only warns."""
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        try:
            with anyio.fail_after(timeout_ms / 1000):
                failures = 0
                while True:
                    lagging = []
                    for node in self._core.store.nodes():
                        try:
                            response = await self._core.send(node.node_id, request)
                        except KafkaError:
                            continue  # an unreachable broker cannot hold anyone up
                        if not all(done(t) for t in response.topics):
                            lagging.append(node.node_id)
                    if not lagging:
                        break
                    await anyio.sleep(self._backoff.delay_s(min(failures, 3)))
                    failures += 1
        except TimeoutError:
            log.warning("%s: brokers %s still lag after %.0f ms", what, lagging, timeout_ms)
        await self._core.refresh_metadata(f"{what} done")

    # ------------------------------------------------------------------- cluster
    @guarded
    async def describe_cluster(self) -> ClusterDescription:
        async def attempt() -> ClusterDescription:
            response = await self._send_any(DescribeClusterRequest())
            if response.error_code:
                raise error_for_code(response.error_code, response.error_message or "DescribeCluster")
            return ClusterDescription(
                cluster_id=response.cluster_id,
                controller_id=response.controller_id,
                brokers=tuple(
                    BrokerDescription(b.broker_id, b.host, b.port, b.rack)
                    for b in sorted(response.brokers, key=lambda b: b.broker_id)
                ),
            )

        return await self._retrying("describe_cluster", attempt, None)

    # ------------------------------------------------------------------- configs
    def _config_node(self, resource: ConfigResource) -> int | None:
        """Broker configs must be asked of that broker; everything else of any broker."""
        if resource.type_code == 4 and resource.name.isdigit():
            return int(resource.name)
        return None

    @guarded
    async def describe_configs(
        self, config_resources: Sequence[ConfigResource], include_synonyms: bool = False
    ) -> dict[tuple[int, str], dict[str, ConfigEntry]]:
        """Describe configs; returns {(resource_type, name): {config name: ConfigEntry}}."""
        by_node: dict[int | None, list[ConfigResource]] = {}
        for res in config_resources:
            by_node.setdefault(self._config_node(res), []).append(res)
        out: dict[tuple[int, str], dict[str, ConfigEntry]] = {}
        for node, resources in by_node.items():
            request = DescribeConfigsRequest(
                resources=[
                    DescribeConfigsRequest.DescribeConfigsResource(
                        resource_type=r.type_code,
                        resource_name=r.name,
                        configuration_keys=None if not r.configs else sorted(r.configs),
                    )
                    for r in resources
                ],
                include_synonyms=include_synonyms,
            )

            async def attempt(request: Any = request, node: int | None = node) -> Any:
                if node is None:
                    return await self._send_any(request)
                return await self._core.send(node, request)

            response = await self._retrying("describe_configs", attempt, None)
            raise_item_errors(
                "DescribeConfigs",
                [(r.resource_name, r.error_code, r.error_message) for r in response.results if r.error_code],
            )
            for r in response.results:
                out[(r.resource_type, r.resource_name)] = {
                    c.name: ConfigEntry(c.name, c.value, c.read_only, c.is_sensitive, c.config_source)
                    for c in r.configs
                }
        return out

    @guarded
    async def alter_configs(
        self, config_resources: Sequence[ConfigResource], op: AlterConfigOp = AlterConfigOp.SET
    ) -> None:
        """IncrementalAlterConfigs: SET each given key (a None value DELETEs it)."""
        by_node: dict[int | None, list[ConfigResource]] = {}
        for res in config_resources:
            by_node.setdefault(self._config_node(res), []).append(res)
        for node, resources in by_node.items():
            request = IncrementalAlterConfigsRequest(
                resources=[
                    IncrementalAlterConfigsRequest.AlterConfigsResource(
                        resource_type=r.type_code,
                        resource_name=r.name,
                        configs=[
                            IncrementalAlterConfigsRequest.AlterableConfig(
                                name=k,
                                config_operation=int(AlterConfigOp.DELETE if v is None else op),
                                value=v,
                            )
                            for k, v in sorted((r.configs or {}).items())
                        ],
                    )
                    for r in resources
                ],
                validate_only=False,
            )

            async def attempt(request: Any = request, node: int | None = node) -> None:
                if node is None:
                    response = await self._send_any(request)
                else:
                    response = await self._core.send(node, request)
                raise_item_errors(
                    "IncrementalAlterConfigs",
                    [
                        (r.resource_name, r.error_code, r.error_message)
                        for r in response.responses
                        if r.error_code
                    ],
                )

            await self._retrying("alter_configs", attempt, None)

    incremental_alter_configs = alter_configs


AdminClient = AIOKafkaAdminClient

__all__ = ["AIOKafkaAdminClient", "AdminClient", "KafkaError"]
