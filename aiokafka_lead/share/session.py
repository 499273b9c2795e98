"""A share session with one broker (KIP-932), and the requests it sends (no I/O).

The first ShareFetch of a session has epoch 0 and names every partition to fetch; it may
not carry acknowledgements. Each later request (ShareFetch or ShareAcknowledge) carries
the next epoch (1, 2, ..., wrapping to 1) and only what changed: partitions added (or
carrying acknowledgements), partitions forgotten. Epoch -1 closes the session. An answer
SHARE_SESSION_NOT_FOUND or INVALID_SHARE_SESSION_EPOCH, or a request whose outcome is
unknown (a cut connection), resets the session: the next request opens a new one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import anyio

from aiokafka_lead.mappings import get_or_add
from aiokafka_lead.protocol.messages import ShareAcknowledgeRequest, ShareFetchRequest
from aiokafka_lead.share.acks import has_renew
from aiokafka_lead.share.config import ShareConsumerConfig
from aiokafka_lead.share.runs import Acks
from aiokafka_lead.structs import TopicPartition

INITIAL_EPOCH = 0
CLOSE_EPOCH = -1
MAX_EPOCH = 2**31 - 1

P = TypeVar("P")


def acked_partition(
    partition: Callable[..., P], batch: Callable[..., Any], tp: TopicPartition, acks: Acks | None
) -> P:
    """``tp``'s entry of a ShareFetch or ShareAcknowledge (``partition`` and ``batch`` are
    that request's partition and acknowledgement batch classes) carrying ``acks``."""
    return partition(
        partition_index=tp.partition,
        acknowledgement_batches=[
            batch(first_offset=b.first_offset, last_offset=b.last_offset, acknowledge_types=list(b.types))
            for b in (acks.batches() if acks is not None else ())
        ],
    )


class ShareSession:
    """Our side of one broker's share session: its epoch and the partitions it holds."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.epoch = INITIAL_EPOCH
        self.partitions: dict[TopicPartition, uuid.UUID] = {}
        #: sessions opened (1 + resets), for tests and logs
        self.opened = 0

    @property
    def is_open(self) -> bool:
        return self.epoch > 0

    def reset(self) -> None:
        self.epoch = INITIAL_EPOCH
        self.partitions = {}

    def advance(self) -> None:
        """The request at ``epoch`` was answered: the next one carries the next epoch."""
        if self.epoch == INITIAL_EPOCH:
            self.opened += 1
        self.epoch = 1 if self.epoch >= MAX_EPOCH else self.epoch + 1

    def fetch_request(
        self,
        member_id: str,
        config: ShareConsumerConfig,
        wanted: Mapping[TopicPartition, uuid.UUID],
        acks: Mapping[TopicPartition, Acks],
    ) -> tuple[ShareFetchRequest, dict[TopicPartition, uuid.UUID]]:
        """The next ShareFetch: fetch ``wanted``, piggy-back ``acks`` (empty at epoch 0).

        Returns the request and the session's partitions once it is answered."""
        if self.epoch == INITIAL_EPOCH and acks:
            raise ValueError("acknowledgements cannot open a share session")
        if self.epoch == INITIAL_EPOCH:
            listed = set(wanted)
            forgotten: dict[TopicPartition, uuid.UUID] = {}
        else:
            listed = {tp for tp in wanted if tp not in self.partitions} | set(acks)
            forgotten = {tp: tid for tp, tid in self.partitions.items() if tp not in wanted}
        by_topic: dict[uuid.UUID, list[ShareFetchRequest.FetchPartition]] = {}
        for tp in sorted(listed):
            by_topic.setdefault(wanted[tp], []).append(
                acked_partition(
                    ShareFetchRequest.FetchPartition,
                    ShareFetchRequest.AcknowledgementBatch,
                    tp,
                    acks.get(tp),
                )
            )
        gone: dict[uuid.UUID, list[int]] = {}
        for tp, tid in sorted(forgotten.items()):
            gone.setdefault(tid, []).append(tp.partition)
        request = ShareFetchRequest(
            group_id=config.group,
            member_id=member_id,
            share_session_epoch=self.epoch,
            max_wait_ms=config.fetch_max_wait_ms,
            min_bytes=config.fetch_min_bytes,
            max_bytes=config.fetch_max_bytes,
            max_records=config.max_poll_records,
            batch_size=config.max_poll_records,
            share_acquire_mode=config.acquire_mode,
            is_renew_ack=has_renew(dict(acks)),
            topics=[ShareFetchRequest.FetchTopic(topic_id=t, partitions=ps) for t, ps in by_topic.items()],
            forgotten_topics_data=[
                ShareFetchRequest.ForgottenTopic(topic_id=t, partitions=ps) for t, ps in gone.items()
            ],
        )
        return request, dict(wanted)

    def acknowledge_request(
        self,
        group_id: str,
        member_id: str,
        acks: Mapping[TopicPartition, Acks],
        topic_ids: Mapping[str, uuid.UUID],
        *,
        close: bool = False,
    ) -> ShareAcknowledgeRequest:
        """A ShareAcknowledge at the session's epoch (or -1 with ``close``)."""
        by_topic: dict[uuid.UUID, list[ShareAcknowledgeRequest.AcknowledgePartition]] = {}
        for tp in sorted(acks):
            by_topic.setdefault(topic_ids[tp.topic], []).append(
                acked_partition(
                    ShareAcknowledgeRequest.AcknowledgePartition,
                    ShareAcknowledgeRequest.AcknowledgementBatch,
                    tp,
                    acks[tp],
                )
            )
        return ShareAcknowledgeRequest(
            group_id=group_id,
            member_id=member_id,
            share_session_epoch=CLOSE_EPOCH if close else self.epoch,
            is_renew_ack=has_renew(dict(acks)),
            topics=[
                ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )


class NodeSessions:
    """The share session with each broker, and the lock its requests take turns on (its
    epochs must follow each other): fetches, acknowledgements and ``commit()`` alike."""

    def __init__(self) -> None:
        self.sessions: dict[int, ShareSession] = {}
        self._locks: dict[int, anyio.Lock] = {}

    def session(self, node_id: int) -> ShareSession:
        return get_or_add(self.sessions, node_id, ShareSession)

    def lock(self, node_id: int) -> anyio.Lock:
        return get_or_add(self._locks, node_id, lambda _: anyio.Lock())

    def open_nodes(self) -> set[int]:
        """Nodes whose session holds partitions."""
        return {n for n, s in self.sessions.items() if s.partitions}


__all__ = [
    "CLOSE_EPOCH",
    "NodeSessions",
    "ShareSession",
]
