"""The sender loop: drains ready batches to partition leaders and handles the outcomes.

KIP-951 on the produce path (rules in docs/DESIGN.md and docs/kip-951.md):
NOT_LEADER_OR_FOLLOWER responses carry CurrentLeader per partition and NodeEndpoints at
the top level (Produce v10+). They go to ``MetadataStore.apply_leader_hints`` BEFORE the
failed batch is requeued, so the very next drain sees the advanced epoch and sends the
batch at once to the new leader; the store asks the background refresher for an expedited
refresh, which nothing here waits for. Hints that do not advance the epoch change nothing:
the batch backs off as usual (no hot loop).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import (
    DecodeError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    error_for_code,
)
from aiokafka_lead.metadata import LeaderHint, MetadataChange, endpoint_nodes
from aiokafka_lead.producer import retry_policy as policy
from aiokafka_lead.producer.accumulator import RecordAccumulator
from aiokafka_lead.producer.batch import ProducerBatch
from aiokafka_lead.producer.config import ProducerConfig
from aiokafka_lead.producer.idempotence import IdempotenceState
from aiokafka_lead.producer.lanes import NodeLanes
from aiokafka_lead.producer.metrics import ProducerMetrics
from aiokafka_lead.protocol.messages import ProduceRequest, ProduceResponse
from aiokafka_lead.protocol.produce_wire import BatchBytes, ProduceAnswer, ProduceWire, Written
from aiokafka_lead.ratelog import RateLimitedLog

if TYPE_CHECKING:
    from aiokafka_lead.network.connection import Connection
    from aiokafka_lead.producer.transaction import TransactionManager

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Submitted:
    """A produce request sent by :meth:`Connection.submit`, until its outcome is in."""

    node_id: int
    lane: int
    sent_at: float  # when the drain picked it (lanes.py)
    started: float  # when it was written (its latency)
    batches: list[ProducerBatch]


class Sender:
    def __init__(
        self,
        core: ClientCore,
        accumulator: RecordAccumulator,
        config: ProducerConfig,
        *,
        idempotence: IdempotenceState | None,
        metrics: ProducerMetrics,
        transaction: TransactionManager | None = None,
    ) -> None:
        self._core = core
        self._acc = accumulator
        self._config = config
        self._backoff = core.backoff
        self._ids = idempotence
        self._metrics = metrics
        self._txn = transaction
        self._in_flight = 0
        # in flight per node and connection (lanes.py)
        self._lanes = NodeLanes(
            config.connections_per_broker, max_in_flight=config.max_in_flight_requests_per_connection
        )
        self._node_failures: dict[int, int] = {}  # requests failed in a row, per node
        # produce requests sent by a task, per (node, lane), not finished: while there are any,
        # the node's next requests go by task too, so none overtakes them on the wire
        self._by_task: dict[tuple[int, int], int] = {}
        self._broken: Exception | None = None  # an outcome's handling failed: run() raises it
        # run() has ended (the producer stopped or failed, and its close fails whatever is
        # left): an outcome that arrives later is not handled, as a cancelled task's was not
        self._ended = False
        self._tg: anyio.abc.TaskGroup | None = None  # run()'s, while it runs
        # _pass_now() is passing: a request that must wait is handed to run() to start
        self._answer_pass = False
        self._deferred: list[tuple[int, int, float, list[ProducerBatch], ProduceWire]] = []
        self._warn = RateLimitedLog(log)

    def _on_metadata_change(self, change: MetadataChange) -> None:
        if change.leaders_changed or change.nodes_changed:
            self._acc.wake()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        store = self._core.store
        store.add_listener(self._on_metadata_change)
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                task_status.started()
                while True:
                    if self._deferred:  # in order, before this pass's: a node's requests keep theirs
                        deferred, self._deferred = self._deferred, []
                        for args in deferred:
                            tg.start_soon(self._produce, *args)
                    if self._broken is not None:
                        raise self._broken
                    if self._ids is not None and self._ids.needs_bump:
                        if self._in_flight:
                            await self._acc.wait_for_work(0.05)
                            continue
                        try:
                            await self._ids.bump_epoch()
                        except KafkaError as exc:
                            # no producer id: what is queued cannot be sent in order; fail it
                            # clearly, keep the producer alive and try again after a backoff
                            log.error("producer epoch bump failed: %r", exc)
                            self._acc.fail_all(exc)
                            await self._acc.wait_for_work(self._backoff.delay_s(3))
                            continue
                    more, wait_s = self._pass()
                    if not more:
                        await self._acc.wait_for_work(wait_s)
        finally:
            self._ended = True
            self._tg = None
            store.remove_listener(self._on_metadata_change)

    def _pass(self) -> tuple[bool, float | None]:
        """One pass: drain what may go now and send it. (True, None): a partition's next
        batch may go at once, pass again; else (False, the seconds until a pass is due
        again, None: only when woken)."""
        tg = self._tg
        assert tg is not None
        store = self._core.store
        now = time.monotonic()
        busy = self._lanes.holds(now)
        released_at = min(busy.values(), default=math.inf)  # the first hold to end
        txn = self._txn
        result = self._acc.drain(
            store,
            self._config.max_request_size,
            hints=self._config.enable_leader_hints,
            busy_nodes=busy,
            held=txn.held if txn is not None else (),
            unverified=txn.unverified if txn is not None else (),
            lane0_out=self._lanes.lane0_out() if txn is not None and txn.unverified else (),
            pipelining=self._lanes.pipelining(),
            confirmed=self._ids.confirmed if self._ids is not None else (),
        )
        self._metrics.pipelined_batches += result.pipelined
        for batch in result.expired:
            message = self._expiry_message(batch, batch.last_error)
            self._fail(batch, KafkaTimeoutError(message), expired=True)
        for node_id, batches in result.by_node.items():
            self._stamp(batches)  # here, in drain order: a partition's sequences ascend
            self._in_flight += 1
            lane = self._lanes.lane_for(node_id)
            self._lanes.begin(node_id, lane, now)
            self._metrics.express_requests += lane
            self._start(tg, node_id, lane, now, batches)
        if result.more:
            return True, None  # the next batch of a partition just taken may go at once
        # Otherwise sleep, after a pass that sent too: what it left waits for a wake-up (an
        # answer, an append, an expiry) or for the time it named, so a drain right away
        # would find nothing (a whole pass per request). A wake-up during the pass is kept:
        # the wait returns at once.
        if result.by_node:  # the nodes just sent to are held now too
            at = time.monotonic()
            for node_id in result.by_node:
                until = self._lanes.hold_of(node_id, at)
                if until is None:
                    busy.pop(node_id, None)
                else:
                    busy[node_id] = until
        self._acc.hold(busy, store.leader_for)
        wait_s = released_at - now if released_at != math.inf else None
        if result.next_check_s is not None:
            wait_s = result.next_check_s if wait_s is None else min(wait_s, result.next_check_s)
        return False, wait_s

    def _pass_now(self) -> None:
        """A pass where an answer was just handled, instead of waking run() for it: the
        event loop then takes no extra turn (a poll of its selector and a task step) before
        the batches that waited for the answer go. run() is woken instead while it has
        something to await first (an epoch bump), a failure to raise or is not running; a
        pass that fails is run()'s failure, raised there. A request that must wait for its
        connection needs a task, which a loop callback cannot start: run() starts it."""
        if self._tg is None or self._broken is not None or (self._ids is not None and self._ids.needs_bump):
            self._acc.wake()
            return
        self._answer_pass = True
        try:
            more, wait_s = True, None
            while more:
                more, wait_s = self._pass()
        except Exception as exc:
            self._broken = exc
            self._acc.wake()
            return
        finally:
            self._answer_pass = False
        self._acc.next_pass_at(math.inf if wait_s is None else time.monotonic() + wait_s)

    def _expiry_message(self, batch: ProducerBatch, last: BaseException | None) -> str:
        age = (time.monotonic() - batch.created_at) * 1000
        detail = f"; last error: {last!r}" if last is not None else f"; {self._why_unsent(batch)}"
        return (
            f"{batch.record_count} record(s) for {batch.tp.topic}-{batch.tp.partition} not delivered "
            f"within delivery_timeout_ms ({self._config.delivery_timeout_s * 1000:.0f} ms, age {age:.0f} ms, "
            f"{batch.attempts} attempt(s)){detail}"
        )

    def _why_unsent(self, batch: ProducerBatch) -> str:
        """Why a batch that expired in the queue could not go (the timeout error says it)."""
        store = self._core.store
        tp = batch.tp
        part = store.partition(tp)
        if part is None:
            problem = store.topic_problem(tp.topic)
            return problem or f"the metadata no longer lists {tp.topic}-{tp.partition}"
        if part.leader_id < 0:
            return f"{tp.topic}-{tp.partition} has no leader"
        if store.node(part.leader_id) is None:
            return f"its leader, node {part.leader_id}, is not among the usable brokers in the metadata"
        try:
            error = self._core.pool.last_error(part.leader_id)
        except KafkaError:  # closing
            error = None
        if error is not None:
            return f"its leader, node {part.leader_id}, is unreachable: {error}"
        return f"its leader, node {part.leader_id}, was busy with earlier requests"

    # ----------------------------------------------------------------- outcomes
    def _fail(self, batch: ProducerBatch, error: BaseException, *, expired: bool = False) -> None:
        batch.fail(error)
        if self._txn is not None:
            self._txn.batch_failed(batch, error)
        self._acc.finished(batch)
        self._metrics.records_failed += batch.record_count
        if expired:
            self._metrics.batches_expired += 1
        log.debug("batch %r failed: %r", batch, error)

    def _retry_or_fail(
        self,
        batch: ProducerBatch,
        error: KafkaError,
        now: float,
        *,
        force_retry: bool = False,
        behind_earlier: bool = False,
    ) -> None:
        """Apply :func:`.retry_policy.decide_retry` to a failed batch: fail it, expire it, or requeue it."""
        decision = policy.decide_retry(
            retriable=error.retriable,
            force=force_retry,
            behind_earlier=behind_earlier,
            failures=batch.attempts,
            age_s=now - batch.created_at,
            delivery_timeout_s=self._config.delivery_timeout_s,
            backoff=self._backoff,
        )
        if decision.action is policy.RetryAction.FAIL:
            self._fail(batch, error)
            return
        if decision.action is policy.RetryAction.EXPIRE:
            self._fail(batch, KafkaTimeoutError(self._expiry_message(batch, error)), expired=True)
            return
        batch.attempts += 1
        batch.last_error = error
        if decision.wait_for_metadata:
            batch.last_failure = now
        batch.retry_at = now + decision.delay_s
        self._metrics.batches_retried += 1
        self._metrics.records_retried += batch.record_count
        self._metrics.errors[type(error).__name__] += 1
        self._acc.requeue(batch)

    # ------------------------------------------------------------------ request
    def _stamp(self, batches: list[ProducerBatch]) -> None:
        store = self._core.store
        now = time.monotonic()
        for batch in batches:
            if batch.attempts and now < batch.retry_at:
                self._metrics.immediate_retries += 1  # sent before its backoff ran out (KIP-951)
            batch.sent_epoch = store.leader_epoch(batch.tp)
            if self._ids is not None:
                self._ids.stamp(batch)

    def _request(self, batches: list[ProducerBatch]) -> ProduceWire:
        topics: dict[str, list[tuple[int, BatchBytes]]] = {}
        metrics = self._metrics
        now = time.monotonic()
        records = 0
        for batch in batches:
            parts = batch.parts()
            size = len(parts[0]) + len(parts[1])
            metrics.drained(now - batch.created_at, size, batch.builder.compression_ratio)
            records += batch.record_count
            topics.setdefault(batch.tp.topic, []).append((batch.tp.partition, parts))
        metrics.records_requested += records
        return ProduceWire(
            self._txn.transactional_id if self._txn is not None else None,
            self._config.acks_code,
            self._config.request_timeout_ms,
            list(topics.items()),
        )

    def _start(
        self, tg: anyio.abc.TaskGroup, node_id: int, lane: int, sent_at: float, batches: list[ProducerBatch]
    ) -> None:
        """Send one produce request. When its connection is up and free it is written at once
        and its answer handled by callback (:meth:`Connection.submit`: no task, no cancel
        scope); otherwise a task sends it, waiting as long as it must."""
        request = self._request(batches)
        self._metrics.produce_requests += 1
        key = (node_id, lane)
        conn = self._core.pool.live(node_id, lane=lane)
        if conn is not None and lane == 0:
            self._lanes.round_trip(node_id, conn.handshake_s)
        if conn is not None and key not in self._by_task and self._config.acks_code != 0:
            sent = _Submitted(node_id, lane, sent_at, time.monotonic(), batches)
            answer = functools.partial(self._on_answer, sent)
            try:
                version = self._version(conn)
            except KafkaError:
                pass  # the task says why
            else:
                if conn.submit(request, version=version, timeout_ms=self._wait_ms(batches), on_answer=answer):
                    return
        self._by_task[key] = self._by_task.get(key, 0) + 1
        if self._answer_pass:  # a loop callback has no task to start one from: run() starts it
            self._deferred.append((node_id, lane, sent_at, batches, request))
            self._acc.wake()
            return
        tg.start_soon(self._produce, node_id, lane, sent_at, batches, request)

    def _version(self, conn: Connection) -> int:
        version = conn.version_for(ProduceRequest.API_KEY)
        cap = self._txn.produce_version_cap if self._txn is not None else None
        return min(version, cap) if cap else version

    async def _produce(
        self, node_id: int, lane: int, sent_at: float, batches: list[ProducerBatch], request: ProduceWire
    ) -> None:
        latency: float | None = None
        written = False
        try:
            started = time.monotonic()
            try:
                conn = await self._core.pool.connection(node_id, lane=lane)
                response = await conn.send(
                    request,
                    version=self._version(conn),
                    expect_response=self._config.acks_code != 0,
                    timeout_ms=self._wait_ms(batches),
                )
            except KafkaError as exc:
                self._request_failed(node_id, batches, exc)
                return
            latency = time.monotonic() - started
            written = self._answered(node_id, batches, response, latency)
        finally:
            key = (node_id, lane)
            left = self._by_task[key] - 1
            if left:
                self._by_task[key] = left
            else:
                del self._by_task[key]
            self._request_over(node_id, lane, sent_at, latency, written)

    def _on_answer(
        self, sent: _Submitted, response: ProduceAnswer | None, error: KafkaError | None
    ) -> None:
        """A submitted request's outcome (called by its connection). It must not raise into
        the connection: a failure here is the producer's, which run() raises."""
        latency: float | None = None
        written = False
        try:
            if self._ended:
                return
            if error is not None:
                self._request_failed(sent.node_id, sent.batches, error)
            else:
                latency = time.monotonic() - sent.started
                written = self._answered(sent.node_id, sent.batches, response, latency)
        except Exception as exc:
            if self._broken is None:
                self._broken = exc  # the sender's loop raises it
        finally:
            self._request_over(sent.node_id, sent.lane, sent.sent_at, latency, written)

    def _request_failed(self, node_id: int, batches: list[ProducerBatch], exc: KafkaError) -> None:
        failure = policy.classify_request_failure(
            undecodable=isinstance(exc, DecodeError), retriable=exc.retriable
        )
        error: KafkaError = exc
        if failure.outcome_unknown:
            error = KafkaConnectionError(f"{exc}; the outcome is unknown, as after a cut connection")
        if failure.refresh_metadata:
            self._core.store.request_refresh(f"produce to node {node_id} failed: {type(exc).__name__}")
        self._node_failed(node_id, error)
        now = time.monotonic()
        for batch in batches:
            self._retry_or_fail(batch, error, now)

    def _answered(
        self, node_id: int, batches: list[ProducerBatch], response: ProduceAnswer | None, latency: float
    ) -> bool:
        """True when every batch was written (or sent, at acks=0), with nothing else to do."""
        self._metrics.latency(node_id, latency)
        if response is None:  # acks=0: nothing comes back
            for batch in batches:
                batch.unacknowledged = True
                batch.complete(-1)
                self._done(batch)
            return True
        if self._node_failures.pop(node_id, 0) >= 2:
            log.info("produce requests to node %d succeed again", node_id)
            self._warn.clear(node_id)
        if isinstance(response, Written):
            if self._all_written(batches, response):
                return True
            response = response.response()
        self._handle_response(node_id, batches, response)
        return False

    def _all_written(self, batches: list[ProducerBatch], answer: Written) -> bool:
        """An answer that wrote every partition (the common case, decoded without generated
        objects): each batch completes as in :meth:`_handle_response`. False, with nothing
        done, when it does not name every batch's partition."""
        # keyed by (topic, partition): a TopicPartition (a named tuple) finds its row
        rows = {(row[0], row[1]): row for row in answer.rows}
        if len(rows) != len(batches):
            return False
        done = []
        for batch in batches:
            row = rows.get(batch.tp)
            if row is None:
                return False
            done.append(row)
        self._metrics.throttled(answer.throttle_time_ms)
        for batch, (_, _, base_offset, append_time, start_offset) in zip(batches, done, strict=True):
            self._written(batch, base_offset, append_time, start_offset)
        return True

    def _written(
        self, batch: ProducerBatch, base_offset: int, append_time: int, start_offset: int | None
    ) -> None:
        """The broker wrote ``batch``: it resolves, and the transaction and sequences learn it."""
        batch.complete(base_offset, append_time, start_offset)
        if self._txn is not None:
            self._txn.batch_acknowledged(batch.tp)
        if self._ids is not None:
            self._ids.acknowledged(batch)
        self._done(batch)

    def _request_over(
        self, node_id: int, lane: int, sent_at: float, latency: float | None, written: bool
    ) -> None:
        """A request ended. After an answer that wrote every batch a pass runs here only if
        that frees something to send (RecordAccumulator.request_ended); after anything else
        (errors, retries, a failure of the request or of its handling) the sender is woken."""
        self._in_flight -= 1
        self._lanes.end(node_id, lane, sent_at, latency)
        more = self._acc.request_ended(node_id, self._lanes.hold_of(node_id, time.monotonic()))
        if not written:
            self._acc.wake()
        elif more:
            self._pass_now()

    def _node_failed(self, node_id: int, error: KafkaError) -> None:
        """One WARNING (rate-limited) once a node keeps failing our requests."""
        failures = self._node_failures[node_id] = self._node_failures.get(node_id, 0) + 1
        if failures >= 2:
            self._warn.warning(
                node_id,
                "produce requests to node %d keep failing (%d in a row); retrying; last: %s",
                node_id,
                failures,
                error,
            )

    def _wait_ms(self, batches: list[ProducerBatch]) -> float:
        """How long to wait for the answer: the request timeout, but never past the delivery
        deadline of the oldest batch (a silent broker must not stretch delivery_timeout_ms by
        a whole request timeout)."""
        deadline = min(b.created_at for b in batches) + self._config.delivery_timeout_s
        left_ms = (deadline - time.monotonic()) * 1000
        return max(min(float(self._config.request_timeout_ms), left_ms), 1.0)

    def _split(self, batch: ProducerBatch, node_id: int) -> None:
        """MESSAGE_TOO_LARGE for a batch of several records: split it and send the parts (not a
        retry: attempts and backoff are untouched, as in Java)."""
        parts = self._acc.split_and_requeue(batch)
        self._metrics.batches_split += 1
        log.warning(
            "node %d refused a %d-byte batch of %d records for %s-%d as too large: split into %d",
            node_id,
            batch.builder.size_in_bytes(),
            batch.record_count,
            batch.tp.topic,
            batch.tp.partition,
            len(parts),
        )

    def _too_large(self, batch: ProducerBatch, broker_message: str) -> None:
        """One record the broker will never take: it fails alone, its sequence is given back."""
        self._fail(
            batch,
            error_for_code(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"the record is {batch.builder.size_in_bytes()} bytes as a batch, more than "
                f"{batch.tp.topic}-{batch.tp.partition} accepts (the topic's max.message.bytes or the "
                f"broker's message.max.bytes); nothing else was affected: {broker_message}",
            ),
        )
        if self._ids is not None:
            self._ids.give_back(batch, self._acc.queued(batch.tp))

    def _done(self, batch: ProducerBatch) -> None:
        self._acc.finished(batch)
        self._metrics.records_sent += batch.record_count
        self._metrics.batches_sent += 1

    def _handle_response(self, node_id: int, batches: list[ProducerBatch], response: ProduceResponse) -> None:
        store = self._core.store
        self._metrics.throttled(response.throttle_time_ms)
        by_tp: dict[tuple[str, int], Any] = {
            (t.name, p.index): p for t in response.responses for p in t.partition_responses
        }
        hints: list[LeaderHint] = []
        failed: list[tuple[ProducerBatch, KafkaError, policy.PartitionDecision]] = []
        refresh_reasons: list[str] = []
        for batch in batches:
            part = by_tp.get((batch.tp.topic, batch.tp.partition))
            if part is None:
                missing = KafkaProtocolError(f"node {node_id} did not answer for {batch.tp}")
                failed.append((batch, missing, policy.MISSING_PARTITION))
                continue
            code = part.error_code
            decision = policy.classify_partition(
                code,
                record_count=batch.record_count,
                earlier_unresolved=bool(code) and self._acc.earlier_unresolved(batch),
                idempotent=self._ids is not None,
                transactional=self._txn is not None,
            )
            if decision.verdict is policy.Verdict.WRITTEN:
                self._written(batch, part.base_offset, part.log_append_time_ms, part.log_start_offset)
                continue
            if decision.verdict is policy.Verdict.SPLIT:
                self._split(batch, node_id)
                continue
            message = (
                part.error_message or f"Produce to {batch.tp.topic}-{batch.tp.partition} on node {node_id}"
            )
            if decision.verdict is policy.Verdict.TOO_LARGE:
                self._too_large(batch, message)
                continue
            error = error_for_code(code, message)
            if decision.apply_leader_hint:
                hints.append(LeaderHint.of(batch.tp.topic, batch.tp.partition, part.current_leader))
            if decision.refresh_metadata:
                refresh_reasons.append(f"produce {type(error).__name__}")
            if decision.bump_epoch and self._ids is not None:
                log.warning(
                    "node %d answered %s for %s-%d (base sequence %d, %d in flight): its producer "
                    "state for us is lost; bumping the epoch (KIP-360), the batch is retried after it",
                    node_id,
                    type(error).__name__,
                    batch.tp.topic,
                    batch.tp.partition,
                    batch.base_sequence,
                    self._acc.in_flight_count(batch.tp),
                )
                self._ids.needs_bump = True  # retried after the epoch bump (KIP-360)
            failed.append((batch, error, decision))
        if hints:
            if self._config.enable_leader_hints:
                endpoints = endpoint_nodes(response.node_endpoints)
                store.apply_leader_hints(hints, endpoints, reason="produce NOT_LEADER_OR_FOLLOWER")
            else:
                store.request_refresh("produce NOT_LEADER_OR_FOLLOWER (leader hints off)")
        for reason in dict.fromkeys(refresh_reasons):
            store.request_refresh(reason)
        now = time.monotonic()
        for batch, err, how in failed:  # after the hints: the next drain sees the new epoch
            self._retry_or_fail(
                batch, err, now, force_retry=how.force_retry, behind_earlier=how.behind_earlier
            )
