"""The consumer's Fetch request: what each version carries, built from a KIP-227 session plan.

No I/O: the fetcher records what it asks for each partition (:class:`Sent`), turns that into
the per-partition fields the negotiated version knows (:func:`partition_fetches`), lets the
node's session decide what must go out, and builds the request from the plan
(:func:`fetch_request`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from aiokafka_lead.consumer.config import FetchConfig
from aiokafka_lead.consumer.session import PartitionFetch, SessionPlan
from aiokafka_lead.mappings import group_by_topic
from aiokafka_lead.metadata.model import ZERO_UUID
from aiokafka_lead.protocol.messages import FetchRequest
from aiokafka_lead.structs import TopicPartition

KIP74_VERSION = 3  # Fetch max_bytes, and the first batch returned whole above it
TOPIC_ID_VERSION = 13
DIVERGING_EPOCH_VERSION = 12  # KIP-320: last_fetched_epoch in, diverging_epoch out
RACK_VERSION = 11  # KIP-392
EPOCH_VERSION = 9  # KIP-320: current_leader_epoch


@dataclass(slots=True)
class Sent:
    """What a fetch asked for one partition: its answer counts only while they still hold."""

    fetch_offset: int
    generation: int
    leader_epoch: int
    last_fetched_epoch: int


def partition_fetches(
    sent: dict[TopicPartition, Sent], version: int, partition_max_bytes: int
) -> dict[TopicPartition, PartitionFetch]:
    """The per-partition fields of a Fetch of this version (the epochs only where it has them)."""
    return {
        tp: PartitionFetch(
            fetch_offset=s.fetch_offset,
            current_leader_epoch=s.leader_epoch if version >= EPOCH_VERSION else -1,
            last_fetched_epoch=s.last_fetched_epoch if version >= DIVERGING_EPOCH_VERSION else -1,
            partition_max_bytes=partition_max_bytes,
        )
        for tp, s in sent.items()
    }


def fetch_request(
    plan: SessionPlan,
    version: int,
    config: FetchConfig,
    *,
    max_bytes: int,
    max_wait_ms: int,
    topic_id: Callable[[str], uuid.UUID | None],
) -> FetchRequest:
    """The request for ``plan``; from v13 topics are named by id (KIP-516), before by name."""
    by_name = version < TOPIC_ID_VERSION

    def id_of(name: str) -> uuid.UUID:
        return ZERO_UUID if by_name else (topic_id(name) or ZERO_UUID)

    to_send = group_by_topic(
        (
            tp,
            FetchRequest.FetchPartition(
                partition=tp.partition,
                current_leader_epoch=f.current_leader_epoch,
                fetch_offset=f.fetch_offset,
                last_fetched_epoch=f.last_fetched_epoch,
                log_start_offset=-1,
                partition_max_bytes=f.partition_max_bytes,
            ),
        )
        for tp, f in plan.to_send.items()
    )
    forgotten = group_by_topic((tp, tp.partition) for tp in plan.forgotten)
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=config.fetch_min_bytes,
        max_bytes=max_bytes,
        isolation_level=config.isolation,
        session_id=plan.session_id,
        session_epoch=plan.session_epoch,
        topics=[
            FetchRequest.FetchTopic(topic=name if by_name else "", topic_id=id_of(name), partitions=parts)
            for name, parts in to_send.items()
        ],
        forgotten_topics_data=[
            FetchRequest.ForgottenTopic(topic=name if by_name else "", topic_id=id_of(name), partitions=parts)
            for name, parts in forgotten.items()
        ],
        rack_id=(config.client_rack or "") if version >= RACK_VERSION else "",
    )


__all__ = [
    "DIVERGING_EPOCH_VERSION",
    "EPOCH_VERSION",
    "KIP74_VERSION",
    "RACK_VERSION",
    "TOPIC_ID_VERSION",
    "Sent",
    "fetch_request",
    "partition_fetches",
]
