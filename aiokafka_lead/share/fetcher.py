"""The share consumer's fetching: one ShareFetch in flight per leader node, acknowledgements
piggy-backed, records buffered until a poll takes them.

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

import bisect
import logging
import time
import uuid
from collections import deque
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc

from aiokafka_lead.client import ClientCore
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError, error_for_code
from aiokafka_lead.mappings import get_or_add
from aiokafka_lead.metadata.model import BrokerNode, LeaderHint
from aiokafka_lead.protocol.messages import ShareAcknowledgeResponse, ShareFetchResponse
from aiokafka_lead.ratelog import RateLimitedLog
from aiokafka_lead.records import MemoryRecords
from aiokafka_lead.share.acks import AckLedger
from aiokafka_lead.share.config import AckResult, ShareConsumerConfig
from aiokafka_lead.share.member import ShareGroupMember
from aiokafka_lead.share.records import AcknowledgeType, ShareConsumerRecord
from aiokafka_lead.share.session import FetchSettings, ShareSession
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.telemetry.window import Peak

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

#: far more offsets than a broker acquires for one partition in one answer (Kafka bounds a
#: partition's locks by group.share.partition.max.record.locks, 2000 by default)
MAX_ACQUIRED = 100_000

class AckRound:
    """Acknowledgements sent with one ShareFetch, and their outcomes once it is answered."""

    def __init__(self, partitions: set[TopicPartition]) -> None:
        self.partitions = partitions
        self.outcomes: dict[TopicPartition, KafkaError | None] = {}
        self.done = anyio.Event()


class ShareFetcher:
    """ShareFetch loops per node, the record buffer and the acknowledgement traffic."""

    def __init__(
        self,
        core: ClientCore,
        member: ShareGroupMember,
        ledger: AckLedger,
        config: ShareConsumerConfig,
        *,
        on_ack_result: AckResult,
    ) -> None:
        self._core = core
        self._member = member
        self._ledger = ledger
        self.settings = FetchSettings(
            group_id=config.group,
            max_wait_ms=config.fetch_max_wait_ms,
            min_bytes=config.fetch_min_bytes,
            max_bytes=config.fetch_max_bytes,
            max_records=config.max_poll_records,
            batch_size=config.max_poll_records,
            acquire_mode=config.acquire_mode,
        )
        self._request_timeout_ms = config.request_timeout_ms
        self._backoff = core.backoff
        self._kd = config.key_deserializer
        self._vd = config.value_deserializer
        self._on_ack_result = on_ack_result
        self.sessions: dict[int, ShareSession] = {}
        self._locks: dict[int, anyio.Lock] = {}
        self._busy: set[int] = set()
        self._failures: dict[int, int] = {}
        self._retry_at: dict[int, float] = {}
        self._buffer: dict[int, deque[ShareConsumerRecord[Any, Any]]] = {}
        #: the acknowledgements riding on the ShareFetch in flight to each node
        self.riding: dict[int, AckRound] = {}
        self._wake = anyio.Event()
        self.data = anyio.Event()
        self.closing = False
        #: answered ShareFetch requests, their round trips, records acquired (tests and metrics)
        self.fetches = 0
        self.latency_s = 0.0
        self.latency_peak = Peak()
        self.acquired = 0
        self._refused = RateLimitedLog(log)

    # ------------------------------------------------------------------ buffer
    def buffered(self) -> int:
        return sum(len(b) for b in self._buffer.values())

    def take(
        self, max_records: int, partitions: set[TopicPartition] | None = None
    ) -> list[ShareConsumerRecord[Any, Any]]:
        """Up to ``max_records`` buffered records, node by node, in the order acquired."""
        out: list[ShareConsumerRecord[Any, Any]] = []
        for node_id, buf in self._buffer.items():
            if partitions is None:
                n = min(len(buf), max_records - len(out))
                if n == len(buf):
                    out.extend(buf)
                    buf.clear()
                else:
                    out.extend(buf.popleft() for _ in range(n))
            else:
                keep: deque[ShareConsumerRecord[Any, Any]] = deque()
                while buf:
                    record = buf.popleft()
                    if (
                        len(out) < max_records
                        and TopicPartition(record.topic, record.partition) in partitions
                    ):
                        out.append(record)
                    else:
                        keep.append(record)
                self._buffer[node_id] = keep
            if len(out) >= max_records:
                break
        if not any(self._buffer.values()):
            self.data = anyio.Event()
        self.wake()
        return out

    def release_buffered(self) -> None:
        """Closing: nothing buffered is handed out any more; the broker gets it back."""
        for buf in self._buffer.values():
            by_tp: dict[TopicPartition, list[int]] = {}
            for record in buf:
                by_tp.setdefault(TopicPartition(record.topic, record.partition), []).append(record.offset)
            for tp, offsets in by_tp.items():
                self._ledger.release_buffered(tp, offsets)
            buf.clear()

    def wake(self) -> None:
        self._wake.set()

    # -------------------------------------------------------------------- loop
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            task_status.started()
            while True:
                self._wake = anyio.Event()
                next_retry = self._plan(tg)
                if next_retry is None:
                    await self._wake.wait()
                else:
                    with anyio.move_on_after(max(next_retry - time.monotonic(), 0.0)):
                        await self._wake.wait()

    def _wanted(self) -> dict[int, dict[TopicPartition, uuid.UUID]]:
        """The member's partitions by the node leading each (unknown leaders wait for metadata)."""
        store = self._core.store
        out: dict[int, dict[TopicPartition, uuid.UUID]] = {}
        for tp in self._member.assignment:
            leader = store.leader_for(tp)
            topic_id = store.topic_id(tp.topic)
            if leader is None or topic_id is None:
                store.request_refresh(f"share fetch: no leader or topic id for {tp}")
                continue
            out.setdefault(leader.node_id, {})[tp] = topic_id
        return out

    def _plan(self, tg: anyio.abc.TaskGroup) -> float | None:
        if self.closing or not self._member.in_group:
            return None
        wanted = self._wanted()
        now = time.monotonic()
        next_retry = None
        nodes = (
            set(wanted) | {n for n, s in self.sessions.items() if s.partitions} | self._ledger.pending_nodes()
        )
        for node_id in sorted(nodes):
            if node_id in self._busy or self._buffer.get(node_id):
                continue
            retry_at = self._retry_at.get(node_id, 0.0)
            if retry_at > now:
                next_retry = retry_at if next_retry is None else min(next_retry, retry_at)
                continue
            self._busy.add(node_id)
            tg.start_soon(self._fetch_guarded, node_id, wanted.get(node_id, {}))
        return next_retry

    async def _fetch_guarded(self, node_id: int, wanted: dict[TopicPartition, uuid.UUID]) -> None:
        try:
            async with self.lock(node_id):
                if self.closing:
                    return
                try:
                    ok = await self._fetch(node_id, wanted)
                finally:
                    riding = self.riding.pop(node_id, None)
                    if riding is not None:
                        riding.done.set()
            if ok:
                self._failures.pop(node_id, None)
                self._retry_at.pop(node_id, None)
            else:
                failures = self._failures.get(node_id, 0)
                self._failures[node_id] = failures + 1
                self._retry_at[node_id] = time.monotonic() + self._backoff.delay_s(failures)
        finally:
            self._busy.discard(node_id)
            self.wake()

    def _start_round(
        self, node_id: int, acks: dict[TopicPartition, dict[int, int]]
    ) -> dict[TopicPartition, KafkaError | None]:
        riding = self.riding[node_id] = AckRound(set(acks))
        return riding.outcomes

    def lock(self, node_id: int) -> anyio.Lock:
        return get_or_add(self._locks, node_id, lambda _: anyio.Lock())

    def session(self, node_id: int) -> ShareSession:
        return get_or_add(self.sessions, node_id, ShareSession)

    # ------------------------------------------------------------------ fetch
    async def _fetch(self, node_id: int, wanted: dict[TopicPartition, uuid.UUID]) -> bool:
        """One ShareFetch to ``node_id`` (after a ShareAcknowledge for acknowledgements of
        partitions it no longer serves for us). False: back off before the next one."""
        session = self.session(node_id)
        elsewhere = self._ledger.take(node_id, only={tp for tp in self._ledger.node_of if tp not in wanted})
        if elsewhere:
            if session.is_open:
                await self.acknowledge(node_id, elsewhere)
            else:
                self._report(elsewhere, KafkaConnectionError(f"no share session with node {node_id}"))
        if not wanted and not session.partitions:
            return True
        acks = self._ledger.take(node_id, only=set(wanted)) if session.is_open else {}
        request, after = session.fetch_request(self._member.member_id, self.settings, wanted, acks)
        sent_at = time.monotonic()
        outcomes = self._start_round(node_id, acks)
        try:
            conn = await self._core.pool.connection(node_id)
            response: ShareFetchResponse = await conn.send(
                request, timeout_ms=self._request_timeout_ms + self.settings.max_wait_ms
            )
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            log.info("share fetch from node %d failed (%r); the session starts over", node_id, exc)
            session.reset()
            self._ledger.requeue(acks)
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
        self._apply_hints(node_id, response)
        got = 0
        for topic in response.responses:
            name = self._core.store.topic_name(topic.topic_id)
            if name is None:
                self._core.store.request_refresh(f"share fetch: unknown topic id {topic.topic_id}")
                continue
            for part in topic.partitions:
                tp = TopicPartition(name, part.partition_index)
                if tp in acks:
                    self._ack_outcome(
                        tp, acks[tp], part.acknowledge_error_code, part.acknowledge_error_message
                    )
                    self._renewed(tp, acks[tp], sent_at + lock_s)
                if part.error_code:
                    err = error_for_code(part.error_code, part.error_message or f"ShareFetch {tp}")
                    log.info("share fetch %s from node %d: %r", tp, node_id, err)
                    if part.error_code in MOVED:
                        session.partitions.pop(tp, None)
                        self._core.store.request_refresh(f"share fetch: {type(err).__name__} for {tp}")
                    continue
                got += self._acquire(node_id, tp, part, sent_at + lock_s)
        if got:
            self.acquired += got
            self.data.set()
        return True

    def _fetch_failed(
        self, session: ShareSession, response: ShareFetchResponse, acks: dict[TopicPartition, dict[int, int]]
    ) -> bool:
        err = error_for_code(response.error_code, response.error_message or "ShareFetch")
        log.info("share fetch from node %d: %r; the session starts over", session.node_id, err)
        session.reset()
        self._ledger.requeue(acks)
        return response.error_code in SESSION_ERRORS and self._failures.get(session.node_id, 0) == 0

    def _apply_hints(self, node_id: int, response: ShareFetchResponse | ShareAcknowledgeResponse) -> None:
        hints = []
        for topic in response.responses:
            name = self._core.store.topic_name(topic.topic_id)
            if name is None:
                continue
            for part in topic.partitions:
                leader = part.current_leader
                if part.error_code in MOVED and leader.leader_id >= 0:
                    hints.append(
                        LeaderHint(name, part.partition_index, leader.leader_id, leader.leader_epoch)
                    )
        if hints:
            endpoints = [BrokerNode(n.node_id, n.host, n.port, n.rack) for n in response.node_endpoints]
            self._core.store.apply_leader_hints(
                hints, endpoints, reason=f"share fetch hint from node {node_id}"
            )

    def _acquire(
        self, node_id: int, tp: TopicPartition, part: ShareFetchResponse.PartitionData, deadline: float
    ) -> int:
        """Buffer the records of ``part`` inside its acquired ranges; the rest of those ranges
        are gaps, acknowledged as such."""
        ranges = sorted((a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records)
        if not ranges:
            return 0
        problem = _bad_ranges(ranges)
        if problem is not None:
            self._refused.warning(
                f"share fetch {tp} from node {node_id}",
                "share fetch %s from node %d: answer refused (%s); its records return to the group "
                "when their locks expire",
                tp, node_id, problem,
            )  # fmt: skip
            return 0
        found: list[ShareConsumerRecord[Any, Any]] = []
        got: list[int] = []  # offsets delivered, in the order found
        if part.records:
            kd, vd = self._kd, self._vd
            lookup = _DeliveryCounts(ranges)
            for batch in MemoryRecords(part.records, topic=tp.topic, partition=tp.partition):
                if batch.is_control or batch.last_offset < ranges[0][0] or batch.base_offset > ranges[-1][1]:
                    continue
                epoch = getattr(batch, "partition_leader_epoch", -1)
                ts_type = int(batch.timestamp_type)
                rows: list[Any] = batch.records()  # headers: (str, bytes | None) pairs, as aiokafka's
                whole = lookup.covering(batch.base_offset, batch.last_offset)
                for offset, timestamp, key, value, headers in rows:
                    count = whole or lookup.count(offset)
                    if count is None:
                        continue
                    got.append(offset)
                    found.append(
                        ShareConsumerRecord(
                            tp.topic,
                            tp.partition,
                            offset,
                            timestamp,
                            ts_type,
                            key if kd is None or key is None else kd(key),
                            value if vd is None or value is None else vd(value),
                            None,
                            -1 if key is None else len(key),
                            -1 if value is None else len(value),
                            headers,
                            epoch,
                            count,
                            deadline,
                        )
                    )
        gaps = _gaps(ranges, got)
        self._ledger.acquired(tp, node_id, gaps)
        self._buffer.setdefault(node_id, deque()).extend(found)
        return len(found)

    # ------------------------------------------------------------ acknowledge
    async def acknowledge(
        self, node_id: int, acks: dict[TopicPartition, dict[int, int]], *, close: bool = False
    ) -> dict[TopicPartition, KafkaError | None]:
        """ShareAcknowledge ``acks`` now (the caller holds the node's lock)."""
        session = self.session(node_id)
        if not acks and not close:
            return {}
        err: KafkaError
        if not session.is_open:
            err = KafkaConnectionError(
                f"no share session with node {node_id} to acknowledge on; the records go back to the "
                "group when their acquisition locks expire"
            )
            self._report(acks, err)
            return {tp: err for tp in acks}
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
            self._report(unknown, err)
            results.update(dict.fromkeys(unknown, err))
        request = session.acknowledge_request(
            self.settings.group_id, self._member.member_id, known, topic_ids, close=close
        )
        sent_at = time.monotonic()
        try:
            conn = await self._core.pool.connection(node_id)
            response: ShareAcknowledgeResponse = await conn.send(request, timeout_ms=self._request_timeout_ms)
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            session.reset()
            self._report(known, exc)
            results.update(dict.fromkeys(known, exc))
            return results
        if close:
            session.reset()
        if response.error_code:
            err = error_for_code(response.error_code, response.error_message or "ShareAcknowledge")
            if response.error_code in SESSION_ERRORS:
                session.reset()
            self._report(known, err)
            results.update(dict.fromkeys(known, err))
            return results
        if not close:
            session.advance()
        self._apply_hints(node_id, response)
        lock_s = response.acquisition_lock_timeout_ms / 1000
        for topic in response.responses:
            name = self._core.store.topic_name(topic.topic_id)
            for part in topic.partitions:
                tp = TopicPartition(name or "", part.partition_index)
                if tp not in known:
                    continue
                results[tp] = self._ack_outcome(tp, known[tp], part.error_code, part.error_message)
                if lock_s > 0:
                    self._renewed(tp, known[tp], sent_at + lock_s)
        for tp in known:
            results.setdefault(tp, None)
        return results

    def _ack_outcome(
        self, tp: TopicPartition, acks: dict[int, int], code: int, message: str | None
    ) -> KafkaError | None:
        err = error_for_code(code, message or f"acknowledgement of {tp}") if code else None
        if err is not None:
            log.info("share acknowledgement of %s (%d record(s)) failed: %r", tp, len(acks), err)
        self._on_ack_result({tp: set(acks)}, err)
        return err

    def _report(self, acks: Mapping[TopicPartition, dict[int, int]], err: KafkaError) -> None:
        for tp, per in acks.items():
            log.info("share acknowledgement of %s (%d record(s)) not sent: %r", tp, len(per), err)
            self._on_ack_result({tp: set(per)}, err)

    def _renewed(self, tp: TopicPartition, acks: dict[int, int], deadline: float) -> None:
        if AcknowledgeType.RENEW not in acks.values():
            return
        renewed = [o for o, t in acks.items() if t == AcknowledgeType.RENEW]
        for record in self._ledger.renewed_records(tp, renewed):
            record.lock_deadline = deadline


def _bad_ranges(ranges: list[tuple[int, int, int]]) -> str | None:
    """What is wrong with a partition's AcquiredRecords, if anything (ranges sorted)."""
    span = 0
    previous_last = -1
    for first, last, count in ranges:
        if first < 0 or last < first:
            return f"acquired range {first}-{last} is empty or negative"
        if first <= previous_last:
            return f"acquired ranges overlap at offset {first}"
        if count < 1:
            return f"delivery count {count} for offsets {first}-{last}"
        span += last - first + 1
        previous_last = last
    if span > MAX_ACQUIRED:
        return f"{span} offsets acquired at once (more than {MAX_ACQUIRED})"
    return None


class _DeliveryCounts:
    """The delivery count of an offset inside the (sorted) acquired ranges, ``None`` outside;
    O(1) per offset while offsets ascend, as a batch's records do."""

    __slots__ = ("_i", "_ranges")

    def __init__(self, ranges: list[tuple[int, int, int]]) -> None:
        self._ranges = ranges
        self._i = 0

    def covering(self, first: int, last: int) -> int | None:
        """The delivery count when one range holds every offset from ``first`` to ``last``."""
        count = self.count(first)
        if count is not None and last <= self._ranges[self._i][1]:
            return count
        return None

    def count(self, offset: int) -> int | None:
        ranges = self._ranges
        i = self._i
        if i and offset < ranges[i][0]:
            i = 0  # offsets went back (a broker repeating a batch): search from the start
        while i < len(ranges) and ranges[i][1] < offset:
            i += 1
        self._i = min(i, len(ranges) - 1)
        if i == len(ranges) or offset < ranges[i][0]:
            return None
        return ranges[i][2]


def _gaps(ranges: list[tuple[int, int, int]], got: list[int]) -> list[int]:
    """The offsets of the acquired ranges no delivered record holds."""
    held = sorted(set(got))
    gaps: list[int] = []
    for first, last, _ in ranges:
        lo, hi = bisect.bisect_left(held, first), bisect.bisect_right(held, last)
        if hi - lo < last - first + 1:  # not every offset of the range came
            inside = set(held[lo:hi])
            gaps.extend(o for o in range(first, last + 1) if o not in inside)
    return gaps


__all__ = ["AckRound", "ShareFetcher"]
