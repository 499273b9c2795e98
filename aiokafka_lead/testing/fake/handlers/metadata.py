"""ApiVersions, Metadata (v0-13, with lagging views), FindCoordinator and InitProducerId."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    MetadataRequest,
    MetadataResponse,
)

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.core import Topic
    from aiokafka_lead.testing.fake.view import ClusterView

ALL_TOPICS_EMPTY_LIST_MAX_VERSION = 0  # v0: an empty list means every topic
AUTO_CREATE_FLAG_VERSION = 4  # before v4 every Metadata request may auto-create


async def handle_api_versions(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: ApiVersionsRequest
) -> ApiVersionsResponse:
    features = [
        ApiVersionsResponse.FinalizedFeatureKey(
            name="transaction.version",
            max_version_level=cluster.txns.transaction_version,
            min_version_level=cluster.txns.transaction_version,
        )
    ]
    return ApiVersionsResponse(
        api_keys=cluster.brokers[node_id].api_versions(),
        finalized_features=features if header.api_version >= 3 else [],
        finalized_features_epoch=1 if header.api_version >= 3 else -1,
    )


async def handle_metadata(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: MetadataRequest
) -> MetadataResponse:
    """Current state, or the frozen view of a lagging broker (``FakeCluster.lag_metadata``)."""
    version = header.api_version
    view = cluster.metadata_view(node_id)
    brokers = []
    for nid, broker in sorted(cluster.brokers.items()):
        if nid in cluster.hidden_nodes:
            continue
        host, port = view.nodes[nid] if view is not None and nid in view.nodes else (
            broker.host,
            broker.port,
        )
        brokers.append(
            MetadataResponse.MetadataResponseBroker(
                node_id=nid, host=host, port=port, rack=broker.rack
            )
        )
    wanted = request.topics
    topics: list[MetadataResponse.MetadataResponseTopic] = []
    if wanted is None or (version <= ALL_TOPICS_EMPTY_LIST_MAX_VERSION and not wanted):
        for each in sorted(cluster.topics.values(), key=lambda t: t.name):
            topics.append(_describe(cluster, each, node_id))
    else:
        for item in wanted:
            by_id = version >= 10 and item.name is None
            topic: Topic | None = (
                cluster.topic_by_id(item.topic_id) if by_id else cluster.topics.get(item.name or "")
            )
            if topic is None and not by_id and _may_create(cluster, request, version):
                cluster.create_topic(item.name or "", cluster.default_partitions)
                # Like Kafka: the response that creates a topic has no leaders yet.
                topics.append(
                    MetadataResponse.MetadataResponseTopic(
                        error_code=ErrorCode.LEADER_NOT_AVAILABLE, name=item.name
                    )
                )
            elif topic is None:
                topics.append(
                    MetadataResponse.MetadataResponseTopic(
                        error_code=(
                            ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        ),
                        name=None if by_id else item.name,
                        topic_id=item.topic_id if by_id else uuid.UUID(int=0),
                    )
                )
            else:
                topics.append(_describe(cluster, topic, node_id))
    return MetadataResponse(
        brokers=brokers,
        cluster_id=cluster.cluster_id,
        controller_id=min(cluster.brokers),
        topics=topics,
    )


def _may_create(cluster: ClusterView, request: MetadataRequest, version: int) -> bool:
    wanted = version < AUTO_CREATE_FLAG_VERSION or request.allow_auto_topic_creation
    return cluster.auto_create_topics and wanted


def _describe(cluster: ClusterView, topic: Topic, node_id: int) -> MetadataResponse.MetadataResponseTopic:
    view = cluster.metadata_view(node_id)
    partitions = []
    for part in topic.partitions:
        leader, epoch = part.leader_id, part.leader_epoch
        if view is not None and (topic.name, part.index) in view.partitions:
            leader, epoch = view.partitions[(topic.name, part.index)]
        partitions.append(
            MetadataResponse.MetadataResponsePartition(
                partition_index=part.index,
                leader_id=leader,
                leader_epoch=epoch,
                replica_nodes=list(part.replicas),
                isr_nodes=list(part.replicas),
            )
        )
    return MetadataResponse.MetadataResponseTopic(
        name=topic.name, topic_id=topic.topic_id, partitions=partitions
    )


async def handle_find_coordinator(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    """One coordinator node per key (pinnable with ``FakeCluster.set_coordinator``)."""
    version = header.api_version
    if version < 4:
        coordinator = cluster.coordinator_for(request.key, request.key_type)
        host, port = cluster.address(coordinator)
        return FindCoordinatorResponse(
            node_id=coordinator,
            host=host,
            port=port,
            error_message="NONE" if version >= 1 else "",  # Java's Errors.NONE.message()
        )
    out = []
    for key in request.coordinator_keys:
        coordinator = cluster.coordinator_for(key, request.key_type)
        host, port = cluster.address(coordinator)
        out.append(
            FindCoordinatorResponse.Coordinator(
                key=key, node_id=coordinator, host=host, port=port, error_message=""
            )
        )
    return FindCoordinatorResponse(coordinators=out)


async def handle_init_producer_id(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: InitProducerIdRequest
) -> InitProducerIdResponse:
    """A fresh producer id at epoch 0, or (v3+) the same id at the next epoch.

    Like Java brokers, an empty (rather than null) transactional id is INVALID_REQUEST; a
    transactional id goes to its transaction coordinator (fencing older instances).
    """
    if request.transactional_id == "":
        return InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
    if request.transactional_id is not None:
        if not cluster.txns.is_coordinator(node_id, request.transactional_id):
            return InitProducerIdResponse(
                error_code=ErrorCode.NOT_COORDINATOR, producer_id=-1, producer_epoch=-1
            )
        code, pid, epoch = cluster.txns.init_producer_id(
            request.transactional_id,
            request.transaction_timeout_ms,
            request.producer_id if header.api_version >= 3 else -1,
            request.producer_epoch if header.api_version >= 3 else -1,
        )
        return InitProducerIdResponse(error_code=code, producer_id=pid, producer_epoch=epoch)
    if header.api_version >= 3 and request.producer_id >= 0 and request.producer_epoch >= 0:
        return InitProducerIdResponse(
            producer_id=request.producer_id, producer_epoch=request.producer_epoch + 1
        )
    return InitProducerIdResponse(producer_id=cluster.next_producer_id(), producer_epoch=0)
