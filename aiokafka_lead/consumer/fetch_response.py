"""What a Fetch answer does to each partition it covers.

An answer counts for a partition only while its position and generation are still the ones
the fetch was sent with (a seek, reset or reassignment meanwhile discards it). Then, per
partition: records that take the position forward go to the prefetch buffer, with the
watermarks; a KIP-320 DivergingEpoch truncates the position; NOT_LEADER_OR_FOLLOWER /
FENCED_LEADER_EPOCH carry KIP-951 hints to the MetadataStore; OFFSET_OUT_OF_RANGE resets
the position (or fails the partition under ``auto_offset_reset="none"``); any other error
backs the partition off. Every back-off is exponential per partition, so a broker that keeps
answering the same useless way never causes a fetch storm.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import KW_ONLY, dataclass, field

from aiokafka_lead.consumer.buffer import PartitionRecords
from aiokafka_lead.consumer.config import FetchConfig
from aiokafka_lead.consumer.errors import offsets_out_of_range
from aiokafka_lead.consumer.fetch_request import KIP74_VERSION, RACK_VERSION, TOPIC_ID_VERSION, Sent
from aiokafka_lead.consumer.offsets import PositionManager
from aiokafka_lead.consumer.prefetch import PrefetchBuffer
from aiokafka_lead.consumer.replica_selection import Answer, ReadReplicas
from aiokafka_lead.consumer.subscription import PartitionState, ResetStrategy, SubscriptionState
from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.error_code import PARTITION_REFRESH, ErrorCode
from aiokafka_lead.errors import DecodeError, KafkaError, KafkaProtocolError, error_for_code
from aiokafka_lead.metadata.model import HintOutcome, LeaderHint, endpoint_nodes
from aiokafka_lead.protocol.messages import FetchResponse
from aiokafka_lead.ratelog import RateLimitedLog
from aiokafka_lead.records import MemoryRecords
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.telemetry.window import Peak

log = logging.getLogger(__name__)
#: fetches of a partition failing in a row before an operator is warned
WARN_AFTER_FAILURES = 3
RESET_SPECS = {ResetStrategy.EARLIEST: -2, ResetStrategy.LATEST: -1}


@dataclass(slots=True)
class FetchStats:
    """Counters for tests and metrics."""

    fetches: int = 0
    hints_applied: int = 0
    hints_ignored: int = 0
    discarded: int = 0
    #: time.monotonic() of the last fetch that returned records, per node
    last_data_at: dict[int, float] = field(default_factory=dict)
    #: seconds from an applied KIP-951 hint to the first records from the new leader
    move_recovery_s: list[float] = field(default_factory=list)
    #: seconds from an applied hint to the new leader's first answer (records or not)
    move_first_fetch_s: list[float] = field(default_factory=list)
    moved_at: dict[TopicPartition, float] = field(default_factory=dict)
    answered: set[TopicPartition] = field(default_factory=set)
    #: Fetch answers and their round trips (seconds), record bytes fetched, records handed out
    answers: int = 0
    latency_s: float = 0.0
    latency_peak: Peak = field(default_factory=Peak)
    bytes_fetched: int = 0
    records_consumed: int = 0

    def answered_in(self, seconds: float) -> None:
        self.answers += 1
        self.latency_s += seconds
        self.latency_peak.record(seconds)


@dataclass(slots=True, eq=False)
class FetchResponseHandler:
    """Applies the outcome of each Fetch (its answer, or its failure) to the partitions' states,
    the prefetch buffer and the metadata."""

    core: ClientCore
    subs: SubscriptionState
    positions: PositionManager
    config: FetchConfig
    buffer: PrefetchBuffer
    replicas: ReadReplicas
    stats: FetchStats
    _: KW_ONLY
    #: hands the user an error to raise from its next call
    report_error: Callable[[KafkaError], None]
    #: wakes the user's polls (records buffered)
    notify_data: Callable[[], None]
    _warn: RateLimitedLog = field(init=False, default_factory=lambda: RateLimitedLog(log))
    #: fetches failed in a row, per node
    _node_failures: dict[int, int] = field(init=False, default_factory=dict)

    def back_off(self, tps: Iterable[TopicPartition], reason: object) -> None:
        """The partitions' next fetch waits, exponentially longer with each failure in a row."""
        now = time.monotonic()
        for tp in tps:
            st = self.subs.get(tp)
            if st is None:
                continue
            st.retry_at = now + self.core.backoff.delay_s(st.failures)
            st.failures += 1
            log.debug(
                "fetch %s-%d backs off %.0f ms: %s", tp.topic, tp.partition, (st.retry_at - now) * 1e3, reason
            )

    def failed(self, node_id: int, sent: dict[TopicPartition, Sent], exc: KafkaError) -> None:
        """A fetch from ``node_id`` got no usable answer: its partitions try again later."""
        if not exc.retriable:
            self.report_error(exc)
        log.debug("fetch from node %d failed: %r", node_id, exc)
        failures = self._node_failures[node_id] = self._node_failures.get(node_id, 0) + 1
        if failures >= 2:
            self._warn.warning(
                ("node", node_id),
                "fetches from node %d keep failing (%d in a row); retrying; last: %s",
                node_id,
                failures,
                exc,
            )
        self.core.store.request_refresh(f"fetch from node {node_id} failed: {type(exc).__name__}")
        to_leader = self.replicas.on_fetch_failed(node_id, sent)  # KIP-392: at once
        self.back_off([tp for tp in sent if tp not in to_leader], exc)

    def handle(
        self,
        node_id: int,
        version: int,
        sent: dict[TopicPartition, Sent],
        response: FetchResponse,
        source: str = "Fetch",
        *,
        early: bool = False,
    ) -> None:
        """Apply one Fetch answer of ``node_id`` (``early``: it came long before max_wait_ms)."""
        if self._node_failures.pop(node_id, 0) >= 2:
            log.info("fetches from node %d succeed again", node_id)
            self._warn.clear(("node", node_id))
        store = self.core.store
        empty: list[TopicPartition] = []
        hints: list[LeaderHint] = []
        hinted: list[TopicPartition] = []
        retry: list[TopicPartition] = []
        failing: dict[TopicPartition, KafkaError] = {}
        got_data = False
        seen_records = False  # KIP-74: the first partition with records is owed a whole batch
        for t in response.responses:
            name = t.topic if version < TOPIC_ID_VERSION else store.topic_name(t.topic_id)
            if name is None:
                continue
            for p in t.partitions:
                owed_whole = not seen_records and version >= KIP74_VERSION
                seen_records = seen_records or bool(p.records)
                tp = TopicPartition(name, p.partition_index)
                s = sent.get(tp)
                st = self.subs.get(tp)
                if s is None or st is None or st.generation != s.generation or st.position != s.fetch_offset:
                    self.stats.discarded += 1
                    continue  # sought, reset or unassigned meanwhile
                code = p.error_code
                if code == ErrorCode.NONE:
                    answer = self.replicas.on_answer(
                        tp,
                        node_id,
                        p.preferred_read_replica if version >= RACK_VERSION else -1,
                        s.leader_epoch,
                        len(p.records) if p.records is not None else 0,
                    )
                    if answer is Answer.DATA:
                        accepted = self._accept(
                            tp, st, s, p, source=source, owed_whole=owed_whole, early=early
                        )
                        got_data |= accepted
                        if not accepted and not p.records:
                            empty.append(tp)
                    elif answer is Answer.NOT_FOLLOWED:
                        retry.append(tp)
                    continue
                # KIP-392: any error from a read replica sends the partition back to its leader
                from_replica = self.replicas.on_error(tp, node_id, error_for_code(code).error_name)
                if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
                    hints.append(LeaderHint.of(name, tp.partition, p.current_leader))
                    hinted.append(tp)
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE and not from_replica:
                    self._out_of_range(tp, s.fetch_offset)
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    retry.append(tp)  # a read replica's answer: the leader decides (after a backoff)
                else:
                    err = error_for_code(code, f"Fetch {tp.topic}-{tp.partition} from node {node_id}")
                    if code in PARTITION_REFRESH:
                        store.request_refresh(f"fetch {tp.topic}-{tp.partition}: {type(err).__name__}")
                    if not err.retriable:
                        self.report_error(err)
                    retry.append(tp)
                    failing[tp] = err
        if hinted:
            self._apply_hints(node_id, hints, sent, response)
        if retry:
            self.back_off(retry, "partition error")
        for tp, failure in failing.items():  # an error that lasts: one WARNING, not one per fetch
            if (st := self.subs.get(tp)) is not None and st.failures >= WARN_AFTER_FAILURES:
                self._warn.warning(
                    ("partition", tp),
                    "fetches of %s-%d keep failing (%d in a row); retrying; last: %r",
                    tp.topic, tp.partition, st.failures, failure,
                )  # fmt: skip
        if early and empty and not got_data and not retry and not hinted:
            # nothing to read and no reason to answer early: pace the next fetch (a broker
            # that ignores max_wait_ms, or knows no epoch like ours, would make a storm)
            self.back_off(empty, "empty answer long before max_wait_ms")
            if any((st := self.subs.get(tp)) is not None and st.failures >= 3 for tp in empty):
                self._warn.warning(
                    ("early", node_id),
                    "%s: empty answers long before max_wait_ms, again and again (a broker that does "
                    "not wait for data); fetching from it is paced",
                    source,
                )
        if got_data:
            self.stats.last_data_at[node_id] = time.monotonic()
            self.notify_data()

    def _apply_hints(
        self,
        node_id: int,
        hints: list[LeaderHint],
        sent: dict[TopicPartition, Sent],
        response: FetchResponse,
    ) -> None:
        """KIP-951: retry at once when the leader epoch moved past the one we fetched with.

        The hint itself may advance it (APPLIED), or a Metadata response may already have
        (the hint is then "stale" for the store but the store knows a newer leader). Only
        when the store still has the epoch we used does the partition back off.
        """
        store = self.core.store
        endpoints = endpoint_nodes(response.node_endpoints)
        outcomes = store.apply_leader_hints(hints, endpoints, reason=f"fetch hint from node {node_id}")
        stale = []
        now = time.monotonic()
        for hint in hints:
            tp = hint.tp
            if outcomes.get(tp) == HintOutcome.APPLIED:
                self.stats.hints_applied += 1
            else:
                self.stats.hints_ignored += 1
            st = self.subs.get(tp)
            if st is None:
                continue
            if store.leader_epoch(tp) > sent[tp].leader_epoch:
                self.stats.moved_at[tp] = now
                self.stats.answered.discard(tp)
                st.retry_at = 0.0
                st.failures = 0
                st.express = True
            else:
                stale.append(tp)
        if stale:
            self.back_off(stale, "leader moved, no usable hint")

    def _accept(
        self,
        tp: TopicPartition,
        st: PartitionState,
        s: Sent,
        p: FetchResponse.PartitionData,
        *,
        source: str = "Fetch",
        owed_whole: bool = False,
        early: bool = False,
    ) -> bool:
        div = p.diverging_epoch
        if div is not None and (div.epoch >= 0 or div.end_offset >= 0):
            self.positions.truncated(tp, st, div.end_offset, div.epoch, source="fetch DivergingEpoch")
            return False
        moved = self.stats.moved_at.get(tp)
        if moved is not None and tp not in self.stats.answered:
            self.stats.answered.add(tp)
            self.stats.move_first_fetch_s.append(time.monotonic() - moved)
        # the leader accepted our epoch and found no divergence: the position is valid for it
        st.validated_epoch = max(st.validated_epoch, s.leader_epoch)
        st.last_fetch_ms = int(time.time() * 1000)
        if p.high_watermark >= 0:
            st.highwater = max(st.highwater or 0, p.high_watermark)
        if p.last_stable_offset >= 0:
            st.last_stable_offset = max(st.last_stable_offset or 0, p.last_stable_offset)
        if p.log_start_offset >= 0:
            st.log_start_offset = p.log_start_offset
        data = p.records
        if not data:
            if not early:
                st.failures = 0  # a long poll that found nothing: all is well
            return False
        raw = bytes(data)
        self.stats.bytes_fetched += len(raw)
        if not self._progresses(tp, s.fetch_offset, raw, source, owed_whole):
            return False
        st.failures = 0
        aborted = None
        if self.config.isolation == 1 and p.aborted_transactions:
            aborted = [(a.producer_id, a.first_offset) for a in p.aborted_transactions]
        self.buffer.add(
            PartitionRecords(
                tp,
                raw,
                fetch_offset=s.fetch_offset,
                generation=s.generation,
                aborted=aborted,
                read_committed=self.config.isolation == 1,
                check_crcs=self.config.check_crcs,
            )
        )
        moved = self.stats.moved_at.pop(tp, None)
        if moved is not None:
            self.stats.move_recovery_s.append(time.monotonic() - moved)
        return True

    def _progresses(
        self, tp: TopicPartition, fetch_offset: int, raw: bytes, source: str, owed_whole: bool
    ) -> bool:
        """Whether the records take the position forward; if not, the partition backs off
        exponentially (a broker that keeps answering so never causes a fetch storm) and the
        problem is logged or, when the broker owed a whole batch, raised."""
        try:
            next_offset = MemoryRecords(raw, topic=tp.topic, partition=tp.partition).next_offset()
        except DecodeError as exc:
            raise DecodeError(f"{source}: records of {tp.topic}-{tp.partition}: {exc}") from None
        where = f"{source}: {tp.topic}-{tp.partition} at offset {fetch_offset}"
        if next_offset is None and owed_whole:
            # KIP-74: the first batch of the first partition with records is returned whole,
            # however large; a broker that sends less stays stuck there (Java: "failed to make
            # progress")
            self.report_error(
                KafkaProtocolError(
                    f"{where}: failed to make progress: the answer holds {len(raw)} bytes but no "
                    "complete record batch, although the broker owed one whole batch (KIP-74)"
                )
            )
            self.back_off([tp], "no complete batch, although owed one")
            return False
        if next_offset is None:
            # only a cut-off batch after other partitions' data (brokers send none since KIP-74)
            self.back_off([tp], "fetch returned only a partial batch")
            return False
        if next_offset <= fetch_offset:
            self._warn.warning(
                ("below", tp),
                "%s: the answer's records end at offset %d, below the fetch offset: no progress; "
                "backing off",
                where,
                next_offset - 1,
            )
            self.back_off([tp], f"records end at {next_offset - 1}, below the fetch offset")
            return False
        self._warn.clear(("below", tp))
        return True

    def _out_of_range(self, tp: TopicPartition, offset: int) -> None:
        strategy = self.subs.default_reset
        if strategy == ResetStrategy.NONE:
            self.subs.fail_partition(tp, offsets_out_of_range({tp: offset}))
            return
        log.info(
            "fetch offset %d out of range for %s-%d; resetting to %s",
            offset,
            tp.topic,
            tp.partition,
            strategy.value,
        )
        self.subs.request_reset(tp, RESET_SPECS[strategy])


__all__ = ["FetchResponseHandler", "FetchStats"]
