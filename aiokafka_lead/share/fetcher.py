"""The share consumer's fetch loop: one ShareFetch in flight per leader node, acknowledgements
piggy-backed.

Its parts: ``buffer.py`` holds the records until a poll takes them, ``acquire.py`` turns a
partition's answer into records, ``acknowledge.py`` sends acknowledgements alone and
reports what became of them, ``session.py`` builds the requests.

A node is fetched from when the member has partitions led by it and none of that node's
records are still buffered: acquired records wait under their acquisition lock, so the
consumer keeps at most one answer per node ahead of the application. Each request carries
the acknowledgements pending for that node's partitions; acknowledgements for partitions
the node no longer serves for us go in a ShareAcknowledge first. All requests to one node
take turns (``ShareSession`` epochs must follow each other), ``commit()`` included.

Errors: a session error (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH) or a failed
request resets the node's session, puts its acknowledgements back and retries after a
backoff; a partition error asks for fresh metadata and, with KIP-951's CurrentLeader and
NodeEndpoints, moves the partition at once. Offsets inside an acquired range that carry no
record (control records) are acknowledged as GAP.
"""

from __future__ import annotations

import logging
import time
import uuid

import anyio
import anyio.abc

from aiokafka_lead.backoff import KeyedBackoff
from aiokafka_lead.errors import KafkaConnectionError, KafkaTimeoutError, error_for_code
from aiokafka_lead.protocol.messages import ShareFetchResponse
from aiokafka_lead.ratelog import RateLimitedLog
from aiokafka_lead.records import native
from aiokafka_lead.runtime import WakeLoop
from aiokafka_lead.share.acknowledge import MOVED, SESSION_ERRORS, Acknowledger, ShareParts, apply_hints
from aiokafka_lead.share.acquire import acquire, check_ranges
from aiokafka_lead.share.buffer import ShareBuffer
from aiokafka_lead.share.runs import Acks
from aiokafka_lead.share.session import ShareSession
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.telemetry.window import Peak

log = logging.getLogger(__name__)


class ShareFetcher:
    """ShareFetch loops per node over the record buffer and the acknowledgement traffic."""

    def __init__(self, parts: ShareParts) -> None:
        self._parts = parts
        self._core = parts.core
        self.nodes = parts.nodes
        self.buffer = ShareBuffer()
        self.acks = Acknowledger(parts)
        self._loop = WakeLoop(lambda tg: self._plan(tg))  # noqa: PLW0108 - looked up at each pass
        self._busy: set[int] = set()
        self._backoff = KeyedBackoff(parts.core.backoff)
        self.closing = False
        #: answered ShareFetch requests, their round trips, records acquired (tests and metrics)
        self.fetches = 0
        self.latency_s = 0.0
        self.latency_peak = Peak()
        self.acquired = 0
        self._refused = RateLimitedLog(log)

    def wake(self) -> None:
        self._loop.wake()

    def release_buffered(self) -> None:
        """Closing: nothing buffered is handed out any more; the broker gets it back."""
        self._parts.ledger.release_buffered(self.buffer.take_all())

    # -------------------------------------------------------------------- loop
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        await self._loop.run(task_status=task_status)

    def _wanted(self) -> dict[int, dict[TopicPartition, uuid.UUID]]:
        """The member's partitions by the node leading each (unknown leaders wait for metadata)."""
        store = self._core.store
        out: dict[int, dict[TopicPartition, uuid.UUID]] = {}
        for tp in self._parts.member.assignment:
            leader = store.leader_for(tp)
            topic_id = store.topic_id(tp.topic)
            if leader is None or topic_id is None:
                store.request_refresh(f"share fetch: no leader or topic id for {tp}")
                continue
            out.setdefault(leader.node_id, {})[tp] = topic_id
        return out

    def _plan(self, tg: anyio.abc.TaskGroup) -> float | None:
        if self.closing or not self._parts.member.in_group:
            return None
        wanted = self._wanted()
        now = time.monotonic()
        next_retry = None
        nodes = set(wanted) | self.nodes.open_nodes() | self._parts.ledger.pending_nodes()
        for node_id in sorted(nodes):
            if node_id in self._busy or self.buffer.holds(node_id):
                continue
            retry_at = self._backoff.retry_at(node_id)
            if retry_at > now:
                next_retry = retry_at if next_retry is None else min(next_retry, retry_at)
                continue
            self._busy.add(node_id)
            tg.start_soon(self._fetch_guarded, node_id, wanted.get(node_id, {}))
        return next_retry

    async def _fetch_guarded(self, node_id: int, wanted: dict[TopicPartition, uuid.UUID]) -> None:
        try:
            async with self.nodes.lock(node_id):
                if self.closing:
                    return
                try:
                    ok = await self._fetch(node_id, wanted)
                finally:
                    self.acks.end_round(node_id)
            self._backoff.outcome(node_id, ok=ok)
        finally:
            self._busy.discard(node_id)
            self.wake()

    # ------------------------------------------------------------------ fetch
    async def _fetch(self, node_id: int, wanted: dict[TopicPartition, uuid.UUID]) -> bool:
        """One ShareFetch to ``node_id`` (after a ShareAcknowledge for acknowledgements of
        partitions it no longer serves for us). False: back off before the next one."""
        session = self.nodes.session(node_id)
        elsewhere = self._parts.ledger.take(
            node_id, only={tp for tp in self._parts.ledger.node_of if tp not in wanted}
        )
        if elsewhere:
            if session.is_open:
                await self.acks.acknowledge(node_id, elsewhere)
            else:
                self.acks.report(elsewhere, KafkaConnectionError(f"no share session with node {node_id}"))
        if not wanted and not session.partitions:
            return True
        acks = self._parts.ledger.take(node_id, only=set(wanted)) if session.is_open else {}
        request, after = session.fetch_request(self._parts.member.member_id, self._parts.config, wanted, acks)
        sent_at = time.monotonic()
        outcomes = self.acks.start_round(node_id, acks)
        config = self._parts.config
        try:
            conn = await self._core.pool.connection(node_id)
            response: ShareFetchResponse = await conn.send(
                request, timeout_ms=config.request_timeout_ms + config.fetch_max_wait_ms
            )
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            log.info("share fetch from node %d failed (%r); the session starts over", node_id, exc)
            session.reset()
            self._parts.ledger.requeue(acks)
            outcomes.update(dict.fromkeys(acks, exc))
            return False
        if response.error_code:
            outcomes.update(dict.fromkeys(acks, error_for_code(response.error_code, response.error_message)))
            return self._fetch_failed(session, response, acks)
        session.advance()
        session.partitions = after
        self.fetches += 1
        latency = time.monotonic() - sent_at
        self.latency_s += latency
        self.latency_peak.record(latency)
        lock_s = response.acquisition_lock_timeout_ms / 1000
        apply_hints(self._core, node_id, response)
        got = 0
        for topic in response.responses:
            name = self._core.store.topic_name(topic.topic_id)
            if name is None:
                self._core.store.request_refresh(f"share fetch: unknown topic id {topic.topic_id}")
                continue
            for part in topic.partitions:
                tp = TopicPartition(name, part.partition_index)
                if tp in acks:  # commit() reads the outcome of acknowledgements riding here
                    outcomes[tp] = self.acks.outcome(
                        tp, acks[tp], part.acknowledge_error_code, part.acknowledge_error_message
                    )
                    self.acks.renewed(tp, acks[tp], sent_at + lock_s)
                if part.error_code:
                    err = error_for_code(part.error_code, part.error_message or f"ShareFetch {tp}")
                    log.info("share fetch %s from node %d: %r", tp, node_id, err)
                    if part.error_code in MOVED:
                        session.partitions.pop(tp, None)
                        self._core.store.request_refresh(f"share fetch: {type(err).__name__} for {tp}")
                    continue
                got += self._acquire(node_id, tp, part, sent_at + lock_s)
        self.acquired += got
        return True

    def _fetch_failed(
        self, session: ShareSession, response: ShareFetchResponse, acks: dict[TopicPartition, Acks]
    ) -> bool:
        err = error_for_code(response.error_code, response.error_message or "ShareFetch")
        log.info("share fetch from node %d: %r; the session starts over", session.node_id, err)
        session.reset()
        self._parts.ledger.requeue(acks)
        return response.error_code in SESSION_ERRORS and self._backoff.failures(session.node_id) == 0

    def _acquire(
        self, node_id: int, tp: TopicPartition, part: ShareFetchResponse.PartitionData, deadline: float
    ) -> int:
        """Buffer the records of ``part`` inside its acquired ranges; the rest of those ranges
        are gaps, acknowledged as such."""
        ranges = sorted((a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records)
        if not ranges:
            return 0
        problem = check_ranges(ranges)
        if problem is not None:
            self._refused.warning(
                f"share fetch {tp} from node {node_id}",
                "share fetch %s from node %d: answer refused (%s); its records return to the group "
                "when their locks expire",
                tp, node_id, problem,
            )  # fmt: skip
            return 0
        deserializers = (self._parts.config.key_deserializer, self._parts.config.value_deserializer)
        with native.gc_paused():
            got = acquire(tp, part.records, ranges, deadline, deserializers)
        self._parts.ledger.acquired(tp, node_id, got.gaps)
        self.buffer.add(node_id, got.chunks, got.count)
        return got.count


__all__ = ["ShareFetcher"]
