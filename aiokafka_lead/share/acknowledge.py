"""The share consumer's acknowledgement traffic: ShareAcknowledge requests, the outcomes of
acknowledgements (sent alone or riding on a ShareFetch), lock renewals, and the KIP-951
leader hints both answers carry.

An acknowledgement that cannot be sent (no open session with its node, its topic's id gone
from the metadata, a cut connection) is reported with that error: the broker gives its
records back to the group when their acquisition locks expire.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

import anyio

from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError, error_for_code
from aiokafka_lead.metadata.model import LeaderHint, endpoint_nodes
from aiokafka_lead.protocol.messages import ShareAcknowledgeResponse, ShareFetchResponse
from aiokafka_lead.share.acks import AckLedger
from aiokafka_lead.share.config import AckResult, ShareConsumerConfig
from aiokafka_lead.share.member import ShareGroupMember
from aiokafka_lead.share.records import AcknowledgeType
from aiokafka_lead.share.runs import Acks
from aiokafka_lead.share.session import NodeSessions
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)

SESSION_ERRORS = frozenset({ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH})
#: partition errors that mean "ask the metadata where it lives now"
MOVED = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_ID,
    }
)


@dataclass(frozen=True, slots=True)
class ShareParts:
    """What the share consumer's fetcher and its acknowledgements work with."""

    core: ClientCore
    member: ShareGroupMember
    ledger: AckLedger
    config: ShareConsumerConfig
    #: the share session with each broker, and its lock
    nodes: NodeSessions
    #: the outcome of acknowledgements sent in the background (None: nobody asks)
    on_ack_result: AckResult | None


class AckRound:
    """Acknowledgements sent with one ShareFetch, and their outcomes once it is answered."""

    def __init__(self, partitions: set[TopicPartition]) -> None:
        self.partitions = partitions
        self.outcomes: dict[TopicPartition, KafkaError | None] = {}
        self.done = anyio.Event()


def apply_hints(
    core: ClientCore, node_id: int, response: ShareFetchResponse | ShareAcknowledgeResponse
) -> None:
    """KIP-951: the CurrentLeader of partitions that moved, with the answer's NodeEndpoints."""
    hints = []
    for topic in response.responses:
        name = core.store.topic_name(topic.topic_id)
        if name is None:
            continue
        for part in topic.partitions:
            if part.error_code in MOVED and part.current_leader.leader_id >= 0:
                hints.append(LeaderHint.of(name, part.partition_index, part.current_leader))
    if hints:
        endpoints = endpoint_nodes(response.node_endpoints)
        core.store.apply_leader_hints(hints, endpoints, reason=f"share fetch hint from node {node_id}")


class Acknowledger:
    """ShareAcknowledge, and what becomes of every acknowledgement sent."""

    def __init__(self, parts: ShareParts) -> None:
        self._core = parts.core
        self._parts = parts
        #: the acknowledgements riding on the ShareFetch in flight to each node
        self.riding: dict[int, AckRound] = {}

    def start_round(
        self, node_id: int, acks: Mapping[TopicPartition, Acks]
    ) -> dict[TopicPartition, KafkaError | None]:
        """``acks`` ride on a ShareFetch to ``node_id``: their outcomes go in the dictionary returned."""
        riding = self.riding[node_id] = AckRound(set(acks))
        return riding.outcomes

    def end_round(self, node_id: int) -> None:
        riding = self.riding.pop(node_id, None)
        if riding is not None:
            riding.done.set()

    async def acknowledge(
        self, node_id: int, acks: dict[TopicPartition, Acks], *, close: bool = False
    ) -> dict[TopicPartition, KafkaError | None]:
        """ShareAcknowledge ``acks`` now (the caller holds the node's lock)."""
        session = self._parts.nodes.session(node_id)
        if not acks and not close:
            return {}
        err: KafkaError
        if not session.is_open:
            err = KafkaConnectionError(
                f"no share session with node {node_id} to acknowledge on; the records go back to the "
                "group when their acquisition locks expire"
            )
            self.report(acks, err)
            return dict.fromkeys(acks, err)
        topic_ids = {}
        for tp in acks:
            topic_id = self._core.store.topic_id(tp.topic)
            if topic_id is not None:
                topic_ids[tp.topic] = topic_id
        unknown = {tp: acks[tp] for tp in acks if tp.topic not in topic_ids}
        known = {tp: a for tp, a in acks.items() if tp.topic in topic_ids}
        results: dict[TopicPartition, KafkaError | None] = {}
        if unknown:
            err = KafkaError("the topic's id is no longer in the metadata")
            self.report(unknown, err)
            results.update(dict.fromkeys(unknown, err))
        request = session.acknowledge_request(
            self._parts.config.group, self._parts.member.member_id, known, topic_ids, close=close
        )
        sent_at = time.monotonic()
        try:
            conn = await self._core.pool.connection(node_id)
            response: ShareAcknowledgeResponse = await conn.send(
                request, timeout_ms=self._parts.config.request_timeout_ms
            )
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            session.reset()
            self.report(known, exc)
            results.update(dict.fromkeys(known, exc))
            return results
        if close:
            session.reset()
        if response.error_code:
            err = error_for_code(response.error_code, response.error_message or "ShareAcknowledge")
            if response.error_code in SESSION_ERRORS:
                session.reset()
            self.report(known, err)
            results.update(dict.fromkeys(known, err))
            return results
        if not close:
            session.advance()
        apply_hints(self._core, node_id, response)
        lock_s = response.acquisition_lock_timeout_ms / 1000
        for topic in response.responses:
            name = self._core.store.topic_name(topic.topic_id)
            for part in topic.partitions:
                tp = TopicPartition(name or "", part.partition_index)
                if tp not in known:
                    continue
                results[tp] = self.outcome(tp, known[tp], part.error_code, part.error_message)
                if lock_s > 0:
                    self.renewed(tp, known[tp], sent_at + lock_s)
        for tp in known:
            results.setdefault(tp, None)
        return results

    def outcome(self, tp: TopicPartition, acks: Acks, code: int, message: str | None) -> KafkaError | None:
        """The broker's answer to ``tp``'s acknowledgements, reported."""
        err = error_for_code(code, message or f"acknowledgement of {tp}") if code else None
        if err is not None:
            log.info("share acknowledgement of %s (%d record(s)) failed: %r", tp, acks.count(), err)
        if self._parts.on_ack_result is not None:
            self._parts.on_ack_result({tp: acks.offsets()}, err)
        return err

    def report(self, acks: Mapping[TopicPartition, Acks], err: KafkaError) -> None:
        """Acknowledgements that were not sent."""
        for tp, per in acks.items():
            log.info("share acknowledgement of %s (%d record(s)) not sent: %r", tp, per.count(), err)
            if self._parts.on_ack_result is not None:
                self._parts.on_ack_result({tp: per.offsets()}, err)

    def renewed(self, tp: TopicPartition, acks: Acks, deadline: float) -> None:
        """The locks of ``tp``'s renewed records now run until ``deadline``."""
        renew = int(AcknowledgeType.RENEW)
        if not acks.has(renew):
            return
        for record in self._parts.ledger.renewed_records(tp, acks.offsets_of(renew)):
            record.lock_deadline = deadline


__all__ = ["MOVED", "SESSION_ERRORS", "AckRound", "Acknowledger", "ShareParts", "apply_hints"]
