"""Topics and partitions: create, delete, list, describe, grow.

:class:`TopicsCore` sends the requests and returns each topic's outcome
``(name, error code, message)``; both clients build on it: :class:`TopicsMixin` (the typed
``AdminClient``) raises the first failure's class, naming every failed topic, and
``AIOKafkaAdminClient`` returns the outcomes in aiokafka's response shape.

A topic's error is final (as in Java's admin), except NOT_CONTROLLER, which is retried
(within the call's timeout) for the topics that got it. Created topics and new partitions
are waited for until every broker's metadata shows them led, deleted topics until no broker
lists them (KRaft brokers learn asynchronously): the caller can use the result at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio

from aiokafka_lead.admin.types import (
    BrokerDescription,
    ClusterDescription,
    NewPartitions,
    NewTopic,
    PartitionDescription,
    TopicDescription,
)
from aiokafka_lead.core.client import guarded
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import (
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
)
from aiokafka_lead.metadata.decode import topics_from_response
from aiokafka_lead.metadata.model import TopicMetadata
from aiokafka_lead.network.connection import request_broker
from aiokafka_lead.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    MetadataRequest,
)
from aiokafka_lead.requests.base import RequestBase, answer_error, raise_item_errors

UNKNOWN_TOPIC = UnknownTopicOrPartitionError.errno
#: one topic's outcome: (name, error code, error message)
Outcome = tuple[str, int, str | None]
log = logging.getLogger(__name__)


def _ready(topic: Any, partitions: int) -> bool:
    """A created topic is usable: no error, every partition present and led."""
    return (
        topic.error_code == ErrorCode.NONE
        and (partitions < 0 or len(topic.partitions) >= partitions)
        and len(topic.partitions) > 0
        and all(p.leader_id >= 0 for p in topic.partitions)
    )


def failures(outcomes: Iterable[Outcome]) -> list[Outcome]:
    return [o for o in outcomes if o[1]]


class TopicsCore(RequestBase):
    """The requests, per-topic outcomes and propagation waits both clients share."""

    async def _per_topic(
        self,
        what: str,
        names: Sequence[str],
        send: Callable[[list[str]], Awaitable[list[Outcome]]],
        timeout_ms: float,
    ) -> list[Outcome]:
        """Outcomes of ``send(pending names)``, asking again (within ``timeout_ms``) for
        the topics that got NOT_CONTROLLER; in the order the names were given."""
        settled: dict[str, Outcome] = {}

        async def attempt() -> None:
            pending = [n for n in names if n not in settled]
            redo = []
            for outcome in await send(pending):
                if outcome[1] == ErrorCode.NOT_CONTROLLER:
                    redo.append(outcome[0])
                else:
                    settled[outcome[0]] = outcome
            if redo:
                raise answer_error(ErrorCode.NOT_CONTROLLER, f"{what} {', '.join(redo)}")

        await self._retrying(what, attempt, timeout_ms)
        return [settled[n] for n in names if n in settled]

    async def _create_topics(
        self, new_topics: Iterable[NewTopic], timeout_ms: int | None, validate_only: bool
    ) -> list[Outcome]:
        topics = {t.name: t for t in new_topics}
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms

        async def send(names: list[str]) -> list[Outcome]:
            request = CreateTopicsRequest(
                topics=[
                    CreateTopicsRequest.CreatableTopic(
                        name=t.name,
                        num_partitions=t.num_partitions if not t.replica_assignments else -1,
                        replication_factor=t.replication_factor if not t.replica_assignments else -1,
                        assignments=[
                            CreateTopicsRequest.CreatableReplicaAssignment(
                                partition_index=p, broker_ids=list(b)
                            )
                            for p, b in sorted((t.replica_assignments or {}).items())
                        ],
                        configs=[
                            CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                            for k, v in sorted((t.topic_configs or {}).items())
                        ],
                    )
                    for t in (topics[n] for n in names)
                ],
                timeout_ms=timeout,
                validate_only=validate_only,
            )
            response = await self._send_to_controller(request)
            answered = {r.name for r in response.topics}
            unanswered = [n for n in names if n not in answered]
            if unanswered:  # whether they were created is unknown: not a success, not retried
                raise KafkaProtocolError(
                    f"CreateTopics from {self.answered_by}: field 'topics' has no result for topic(s) "
                    f"{unanswered} (it names {sorted(answered)}); whether they were created is unknown"
                )
            return [(r.name, r.error_code, r.error_message) for r in response.topics if r.name in topics]

        outcomes = await self._per_topic(
            "create_topics", list(topics), send, timeout + self._request_timeout_ms
        )
        created = await self._await_partition_counts(
            "create_topics",
            outcomes,
            {name: t.num_partitions for name, t in topics.items()},
            timeout,
            validate_only=validate_only,
        )
        absent = [name for name in created if self._core.store.partitions_for_topic(name) is None]
        if absent:
            raise KafkaTimeoutError(
                f"create_topics: the controller reported {absent} created, but the brokers' "
                f"metadata still does not show them after {timeout} ms"
            )
        return outcomes

    async def _delete_topics(self, topics: Iterable[str], timeout_ms: int | None) -> list[Outcome]:
        names = list(topics)
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms

        async def send(pending: list[str]) -> list[Outcome]:
            conn = await self._core.any_connection()
            version = conn.version_for(DeleteTopicsRequest.API_KEY)
            if version >= 6:
                request = DeleteTopicsRequest(
                    topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in pending],
                    timeout_ms=timeout,
                )
            else:
                request = DeleteTopicsRequest(topic_names=pending, timeout_ms=timeout)
            response = await conn.send(request, version=version)
            return [(r.name or str(r.topic_id), r.error_code, r.error_message) for r in response.responses]

        outcomes = await self._per_topic("delete_topics", names, send, timeout + self._request_timeout_ms)
        deleted = [name for name, code, _ in outcomes if not code]
        if deleted:
            await self._await_propagation(
                "delete_topics", deleted, lambda t: t.error_code == UNKNOWN_TOPIC, timeout
            )
        return outcomes

    async def _create_partitions(
        self, topic_partitions: dict[str, NewPartitions], timeout_ms: int | None, validate_only: bool
    ) -> list[Outcome]:
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms

        async def send(names: list[str]) -> list[Outcome]:
            request = CreatePartitionsRequest(
                topics=[
                    CreatePartitionsRequest.CreatePartitionsTopic(
                        name=name,
                        count=topic_partitions[name].total_count,
                        assignments=None
                        if topic_partitions[name].new_assignments is None
                        else [
                            CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=list(a))
                            for a in topic_partitions[name].new_assignments or ()
                        ],
                    )
                    for name in names
                ],
                timeout_ms=timeout,
                validate_only=validate_only,
            )
            response = await self._send_to_controller(request)
            return [(r.name, r.error_code, r.error_message) for r in response.results]

        outcomes = await self._per_topic(
            "create_partitions", sorted(topic_partitions), send, timeout + self._request_timeout_ms
        )
        await self._await_partition_counts(
            "create_partitions",
            outcomes,
            {name: p.total_count for name, p in topic_partitions.items()},
            timeout,
            validate_only=validate_only,
        )
        return outcomes

    async def _await_partition_counts(
        self,
        what: str,
        outcomes: list[Outcome],
        counts: Mapping[str, int],
        timeout_ms: float,
        *,
        validate_only: bool,
    ) -> list[str]:
        """Wait (see :meth:`_await_propagation`) until the topics that succeeded show their
        partition count (``counts``; -1: the broker's default) and a leader for each; return
        them (none when only validated: nothing changed)."""
        changed = {name: counts[name] for name, code, _ in outcomes if not code}
        if not changed or validate_only:
            return []
        await self._await_propagation(what, list(changed), lambda t: _ready(t, changed[t.name]), timeout_ms)
        return list(changed)

    async def _metadata(self, topics: Sequence[str] | None) -> Any:
        """Metadata of ``topics`` (all when None); never creates a topic it names."""
        request = MetadataRequest(
            topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        return await self._retrying("metadata", lambda: self._send_any(request), None)

    @guarded
    async def list_topics(self) -> list[str]:
        response = await self._metadata(None)
        return sorted(t.name for t in response.topics if t.name and not t.error_code)

    async def _describe_cluster(self) -> ClusterDescription:
        async def attempt() -> ClusterDescription:
            response = await self._send_any(DescribeClusterRequest())
            if response.error_code:
                raise answer_error(response.error_code, "DescribeCluster", response.error_message)
            return ClusterDescription(
                cluster_id=response.cluster_id,
                controller_id=response.controller_id,
                brokers=tuple(
                    BrokerDescription(b.broker_id, b.host, b.port, b.rack)
                    for b in sorted(response.brokers, key=lambda b: b.broker_id)
                ),
            )

        return await self._retrying("DescribeCluster", attempt, None)

    async def _await_propagation(
        self, what: str, topics: list[str], done: Callable[[Any], bool], timeout_ms: float
    ) -> None:
        """Wait until EVERY broker's metadata shows the change (KRaft brokers learn it
        asynchronously), so the caller can use the topic on any broker at once. Bounded by
        ``timeout_ms``; the change itself has already succeeded, so running out only warns.
        Errors go on naming the broker that answered the change, not those asked here."""
        answered = request_broker.get()
        try:
            await self._await_every_broker(what, topics, done, timeout_ms)
        finally:
            request_broker.set(answered)

    async def _await_every_broker(
        self, what: str, topics: list[str], done: Callable[[Any], bool], timeout_ms: float
    ) -> None:
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        asked = set(topics)
        lagging: list[int] = []
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
                        # only the topics asked for count (an answer may name others); one
                        # it leaves out is not shown yet
                        shown = {t.name: t for t in response.topics if t.name in asked}
                        if len(shown) < len(asked) or not all(done(t) for t in shown.values()):
                            lagging.append(node.node_id)
                    if not lagging:
                        break
                    await anyio.sleep(self._backoff.delay_s(min(failures, 3)))
                    failures += 1
        except TimeoutError:
            log.warning("%s: brokers %s still lag after %.0f ms", what, lagging, timeout_ms)
        await self._core.refresh_metadata(f"{what} done")


class TopicsMixin(TopicsCore):
    """The typed topic methods of ``AdminClient``: per-topic errors raise."""

    @guarded
    async def create_topics(
        self,
        new_topics: Iterable[NewTopic],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        """Create topics; raises TopicAlreadyExistsError etc. naming each failed topic."""
        raise_item_errors(
            "CreateTopics", failures(await self._create_topics(new_topics, timeout_ms, validate_only))
        )

    @guarded
    async def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None) -> None:
        raise_item_errors("DeleteTopics", failures(await self._delete_topics(topics, timeout_ms)))

    @guarded
    async def create_partitions(
        self,
        topic_partitions: dict[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        outcomes = await self._create_partitions(topic_partitions, timeout_ms, validate_only)
        raise_item_errors("CreatePartitions", failures(outcomes))

    @guarded
    async def describe_topics(self, topics: Sequence[str] | None = None) -> list[TopicDescription]:
        """Describe topics (all when None); unknown topics raise UnknownTopicOrPartitionError."""
        described = topics_from_response(await self._metadata(topics))
        errors = [(t.name, t.error_code, None) for t in described if t.error_code]
        raise_item_errors("describe_topics", errors)
        return [_description(t) for t in sorted(described, key=lambda t: t.name)]

    @guarded
    async def describe_cluster(self) -> ClusterDescription:
        return await self._describe_cluster()


def _description(topic: TopicMetadata) -> TopicDescription:
    """A topic's metadata as ``describe_topics`` gives it, its partitions in order."""
    partitions = sorted(topic.partitions, key=lambda p: p.partition)
    return TopicDescription(
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.is_internal,
        partitions=tuple(
            PartitionDescription(
                p.partition, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes, p.offline_replicas
            )
            for p in partitions
        ),
    )
