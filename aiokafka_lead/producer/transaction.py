"""The transactional producer's state machine (KIP-98, KIP-447, KIP-890).

States and transitions follow the Java client's ``TransactionManager``::

    UNINITIALIZED --init--> READY --begin--> IN_TRANSACTION --commit--> COMMITTING --> READY
                                               |   ^                     (EndTxn commit)
                                    error      v   | abort
                                        ABORTABLE_ERROR --abort--> ABORTING --> READY
    any state --fatal error--> FATAL_ERROR (every later call raises the cause)

``TRANSITIONS`` is that diagram as a table; the state changes only through
``TransactionManager._transition``, which refuses anything else. Which error is fatal and
which abortable is decided in :mod:`.retry_policy`.

* Fatal: the producer was fenced by a newer instance with the same transactional id
  (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH from a coordinator), authorization failures,
  INVALID_TXN_STATE, an unsupported version. The producer can only be stopped.
* Abortable: a record that could not be delivered, a rejected offset commit (the consumer
  was fenced by a rebalance), TRANSACTION_ABORTABLE, lost producer state: only
  ``abort_transaction()`` is allowed, after which the producer works again.
* The coordinator moving is retried underneath (see :mod:`.txn_requests`).
* Calls in the wrong state raise at once: ``send()`` and ``send_offsets_to_transaction()``
  outside an open transaction raise aiokafka's :class:`IllegalOperation`, the other calls
  :class:`IllegalStateError`.

Transaction version 1 adds each partition with AddPartitionsToTxn before its first batch
goes out: ``send()`` registers the partition, a background task sends one request for all
partitions registered meanwhile, and the sender holds their batches until it answered.
Version 2 (KIP-890 part 2) needs none of that: Produce v12 adds partitions implicitly,
TxnOffsetCommit v5 adds the group, and every EndTxn returns a bumped epoch.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from aiokafka_lead.config.validation import commit_offsets_argument
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import (
    ERROR_CLASSES,
    IllegalOperation,
    IllegalStateError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    error_for_code,
)
from aiokafka_lead.producer.batch import ProducerBatch
from aiokafka_lead.producer.idempotence import IdempotenceState
from aiokafka_lead.producer.retry_policy import (
    EndFailure,
    end_txn_failure,
    is_fatal,
    skips_end_txn,
    txn_batch_failure,
)
from aiokafka_lead.producer.txn_requests import TV1_PRODUCE_MAX, TxnRequests
from aiokafka_lead.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from aiokafka_lead.producer.accumulator import RecordAccumulator

log = logging.getLogger(__name__)

#: producer epochs are int16; 32767 marks an exhausted epoch and is never handed out
MAX_EPOCH = 2**15 - 1


class TransactionAbortedError(KafkaError):
    """The record was part of a transaction that was aborted before it was sent."""


class TxnState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    READY = "ready"
    IN_TRANSACTION = "in_transaction"
    COMMITTING = "committing_transaction"
    ABORTING = "aborting_transaction"
    ABORTABLE_ERROR = "abortable_error"
    FATAL_ERROR = "fatal_error"


_S = TxnState
#: state -> the states it may change to; anything else is a bug, raised as IllegalStateError
#: (the public calls check their state first and raise the errors aiokafka raises)
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    _S.UNINITIALIZED: frozenset({_S.READY, _S.FATAL_ERROR}),
    _S.READY: frozenset({_S.IN_TRANSACTION, _S.FATAL_ERROR}),
    _S.IN_TRANSACTION: frozenset({_S.COMMITTING, _S.ABORTING, _S.ABORTABLE_ERROR, _S.FATAL_ERROR}),
    # a commit or abort that ran out of time may be called again: the state stays
    _S.COMMITTING: frozenset({_S.COMMITTING, _S.READY, _S.ABORTABLE_ERROR, _S.FATAL_ERROR}),
    _S.ABORTING: frozenset({_S.ABORTING, _S.READY, _S.FATAL_ERROR}),
    _S.ABORTABLE_ERROR: frozenset({_S.ABORTING, _S.FATAL_ERROR}),
    _S.FATAL_ERROR: frozenset(),
}

_IN_TRANSACTION = TxnState.IN_TRANSACTION  # a member lookup costs ~0.1 us on 3.11: send() checks per record


def _code(error: BaseException) -> int:
    return int(getattr(error, "errno", -1) or -1)


class TransactionManager:
    """One transactional id's state, driving the coordinator requests and the sender."""

    def __init__(
        self,
        requests: TxnRequests,
        ids: IdempotenceState,
        accumulator: RecordAccumulator,
    ) -> None:
        self._req = requests
        self._ids = ids
        self._acc = accumulator
        self.state = TxnState.UNINITIALIZED
        self.version = 0  # 1 or 2 once initialized
        self.last_error: BaseException | None = None
        self._partitions: set[TopicPartition] = set()  # in the transaction (added or produced to)
        self._pending: set[TopicPartition] = set()  # waiting for AddPartitionsToTxn (version 1)
        # in the transaction, but no produce to it acknowledged yet in this transaction: the
        # broker checks such a partition's first produce with the coordinator (lanes.py)
        self._unverified: set[TopicPartition] = set()
        self._adding = False
        self._add_wanted = anyio.Event()
        self._add_round = anyio.Event()  # set (and replaced) after every AddPartitionsToTxn round
        self._started = False  # something (records or offsets) joined the transaction
        self._bump_after_abort = False
        self._busy = False  # a commit or abort is running
        self.committed = 0
        self.aborted = 0
        self.commit_latency_ms: list[float] = []

    @property
    def transactional_id(self) -> str:
        return self._req.transactional_id

    def _transition(self, to: TxnState) -> None:
        """The one place the state changes, along :data:`TRANSITIONS`."""
        if to not in TRANSITIONS[self.state]:
            raise IllegalStateError(
                f"transactional id {self.transactional_id!r}: no transition from state "
                f"{self.state.value} to {to.value}"
            )
        self.state = to

    # ----------------------------------------------------------------- checks
    def _raise_if_failed(self, what: str) -> None:
        if self.state is TxnState.FATAL_ERROR:
            cause = self.last_error
            message = (
                f"{what}: the transactional producer {self.transactional_id!r} failed fatally "
                f"({cause!r}); stop it and create a new one"
            )
            # the cause's own class (ProducerFencedError, ...) so callers can catch it by type
            cls: type[KafkaError] = IllegalStateError
            if isinstance(cause, KafkaError) and type(cause) in ERROR_CLASSES.values():
                cls = type(cause)
            raise cls(message) from cause
        if self.state is TxnState.ABORTABLE_ERROR:
            raise IllegalStateError(
                f"{what}: the transaction failed ({self.last_error!r}); only abort_transaction() "
                "is allowed now"
            ) from self.last_error

    def _require(self, what: str, *states: TxnState) -> None:
        if self.state in states:
            return
        self._raise_if_failed(what)
        raise IllegalStateError(
            f"{what} is not allowed in state {self.state.value} (allowed: "
            f"{', '.join(s.value for s in states)})"
        )

    def _require_transaction(self, what: str) -> None:
        """``send()`` / ``send_offsets_to_transaction()``: outside an open transaction they
        raise aiokafka's :class:`IllegalOperation` (after a fatal error, the cause's class)."""
        if self.state is _IN_TRANSACTION:
            return
        if self.state is TxnState.FATAL_ERROR:
            self._raise_if_failed(what)
        if self.state is TxnState.ABORTABLE_ERROR:
            raise IllegalOperation(
                f"{what}: the transaction failed ({self.last_error!r}); only abort_transaction() "
                "is allowed now"
            ) from self.last_error
        hint = "; call begin_transaction() first" if self.state is TxnState.READY else ""
        raise IllegalOperation(f"{what} needs an open transaction (state {self.state.value}){hint}")

    def _fatal(self, error: BaseException) -> BaseException:
        if self.state is not TxnState.FATAL_ERROR:
            log.error("transactional id %s: fatal error %r", self.transactional_id, error)
            self._transition(TxnState.FATAL_ERROR)
            self.last_error = error
        return error

    def _abortable(self, error: BaseException) -> BaseException:
        if self.state is TxnState.IN_TRANSACTION:
            self._bump_after_abort = True  # as Java: the abort also bumps the epoch (KIP-360)
        if self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            log.warning("transactional id %s: transaction must abort: %r", self.transactional_id, error)
            self._transition(TxnState.ABORTABLE_ERROR)
            self.last_error = error
        return error

    def _judge(self, error: BaseException) -> BaseException:
        """Move to the fatal or abortable state for a coordinator-side error; returns it."""
        if is_fatal(_code(error)):
            return self._fatal(error)
        return self._abortable(error)

    # ------------------------------------------------------- hooks (synchronous)
    def holds(self, tp: TopicPartition) -> bool:
        """True if a record for ``tp`` may be sent now with nothing to do: a transaction is
        open and ``tp`` is already in it (``send()``'s hot path; otherwise it calls
        :meth:`add_partition`, which adds it or raises)."""
        return self.state is _IN_TRANSACTION and tp in self._partitions

    def add_partition(self, tp: TopicPartition) -> None:
        """``send()`` calls this for every record: the partition joins the transaction."""
        if self.state is not _IN_TRANSACTION:
            self._require_transaction("send()")
        if tp in self._partitions:
            return
        if self.version >= 2:
            self._started = True  # Produce v12 adds the partition itself
            self._partitions.add(tp)
            self._unverified.add(tp)
        elif tp not in self._pending:
            self._pending.add(tp)
            self._add_wanted.set()

    @property
    def held(self) -> set[TopicPartition]:
        """Partitions whose batches must wait for AddPartitionsToTxn (version 1)."""
        return self._pending

    @property
    def unverified(self) -> set[TopicPartition]:
        """Partitions of the transaction no produce has been acknowledged for yet."""
        return self._unverified

    def batch_acknowledged(self, tp: TopicPartition) -> None:
        """The sender's hook: a batch of the transaction for ``tp`` was written."""
        self._unverified.discard(tp)

    @property
    def produce_version_cap(self) -> int | None:
        return TV1_PRODUCE_MAX if self.version == 1 else None

    def batch_failed(self, batch: ProducerBatch, error: BaseException) -> None:
        """The sender failed a batch of the transaction for good."""
        failure = txn_batch_failure(_code(error), timed_out=isinstance(error, KafkaTimeoutError))
        if failure.bump_after_abort:
            self._bump_after_abort = True  # its sequence may or may not have been written
        if self.state is TxnState.ABORTING:
            return
        if failure.fatal:
            self._fatal(error)
        else:
            self._abortable(error)

    # ------------------------------------------------------------- lifecycle
    async def init(self) -> None:
        """Find the coordinator, pick the protocol version, get a producer id (fencing older
        instances and aborting their open transaction)."""
        self._require("init", TxnState.UNINITIALIZED)
        try:
            self.version = await self._req.transaction_version()
            pid, epoch = await self._req.init_producer_id()
        except KafkaError as exc:
            raise self._judge(exc) from None
        self._ids.adopt(pid, epoch, transactional=True)
        self._transition(TxnState.READY)
        log.info(
            "transactional id %s: producer id %d epoch %d, transaction version %d",
            self.transactional_id, pid, epoch, self.version,
        )

    def begin(self) -> None:
        self._require("begin_transaction()", TxnState.READY)
        latest = self._req.current_transaction_version()
        if latest is not None and latest != self.version:  # nothing is pending between transactions
            log.info("transactional id %s: transaction version now %d", self.transactional_id, latest)
            self.version = latest
        self._transition(TxnState.IN_TRANSACTION)
        self._started = False

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Version 1: add the partitions ``send()`` registered, one request for all of them."""
        task_status.started()
        while True:
            await self._add_wanted.wait()
            self._add_wanted = anyio.Event()
            if not self._pending:
                continue
            self._adding = True
            try:
                await self._add_pending()
            finally:
                self._adding = False
                self._add_round.set()
                self._add_round = anyio.Event()
                self._acc.wake()

    async def _add_pending(self) -> None:
        batch = sorted(self._pending)
        try:
            results = await self._req.add_partitions(batch, self._ids.producer_id, self._ids.producer_epoch)
        except KafkaError as exc:
            self._fail_pending(batch, self._judge(exc))
            return
        failed = {tp: code for tp, code in results.items() if code}
        if any(tp not in results for tp in batch):
            missing = [tp for tp in batch if tp not in results]
            error: BaseException = KafkaProtocolError(
                f"AddPartitionsToTxn from node {self._req.coordinator_id}: field "
                f"'results_by_topic_v3_and_below' has no result for {missing}"
            )
            self._fail_pending(missing, self._abortable(error))
        for tp in batch:
            if tp not in failed and tp in results:
                self._partitions.add(tp)
                self._unverified.add(tp)
                self._pending.discard(tp)
                self._started = True
        if failed:
            # OPERATION_NOT_ATTEMPTED: a sibling failed; name the real cause
            real = [c for c in failed.values() if c != ErrorCode.OPERATION_NOT_ATTEMPTED]
            tp0, code = next((tp, c) for tp, c in failed.items() if not real or c in real)
            where = f"AddPartitionsToTxn for {tp0.topic}-{tp0.partition} from node {self._req.coordinator_id}"
            error = error_for_code(code, where)
            self._fail_pending(list(failed), self._judge(error))
        if self._pending:
            self._add_wanted.set()  # registered while the request was out

    def _fail_pending(self, partitions: list[TopicPartition], error: BaseException) -> None:
        for tp in partitions:
            self._pending.discard(tp)
        self._acc.abort_undrained(error, set(partitions))

    async def _settle(self) -> None:
        """Wait until no AddPartitionsToTxn is pending, then until every batch resolved."""
        while self._pending or self._adding:
            round_done = self._add_round
            self._add_wanted.set()
            await round_done.wait()
        await self._acc.flush()

    # -------------------------------------------------------- offsets, commit, abort
    async def send_offsets(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group: str | ConsumerGroupMetadata,
    ) -> None:
        self._require_transaction("send_offsets_to_transaction()")
        # checked before anything is sent, as aiokafka: a bad call leaves the transaction intact
        group_id = group.group_id if isinstance(group, ConsumerGroupMetadata) else group
        if not group_id or not isinstance(group_id, str):
            raise ValueError(group_id)
        meta = ConsumerGroupMetadata(group) if isinstance(group, str) else group
        normalized = commit_offsets_argument(offsets)
        pid, epoch = self._ids.producer_id, self._ids.producer_epoch
        try:
            if self.version < 2:
                await self._req.add_offsets(meta.group_id, pid, epoch)
            self._started = True
            await self._req.txn_offset_commit(normalized, meta, pid, epoch, self.version)
        except KafkaError as exc:
            raise self._judge(exc) from None

    def _retrying_completion(self, state: TxnState) -> bool:
        """A commit or abort that failed with a retriable error (a timeout) may be called again."""
        return self.state is state and not self._busy

    async def commit(self) -> None:
        if not self._retrying_completion(TxnState.COMMITTING):
            self._require("commit_transaction()", TxnState.IN_TRANSACTION)
        started = time.monotonic()
        self._transition(TxnState.COMMITTING)
        self._busy = True
        try:
            await self._settle()
            if self.state is not TxnState.COMMITTING:  # a batch failed meanwhile
                self._raise_if_failed("commit_transaction()")
            await self._end(commit=True)
        finally:
            self._busy = False
        self.committed += 1
        self.commit_latency_ms.append((time.monotonic() - started) * 1000)
        del self.commit_latency_ms[:-1000]

    async def abort(self) -> None:
        if self.state is TxnState.FATAL_ERROR:
            self._raise_if_failed("abort_transaction()")
        if not self._retrying_completion(TxnState.ABORTING):
            self._require("abort_transaction()", TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR)
        self._transition(TxnState.ABORTING)
        self._busy = True
        try:
            if not self._adding:
                self._pending.clear()  # never sent: nothing to add
            aborted = TransactionAbortedError(f"transaction of {self.transactional_id!r} aborted")
            self._acc.abort_undrained(aborted)
            await self._settle()
            await self._end(commit=False)
        finally:
            self._busy = False
        self.aborted += 1

    async def _end(self, *, commit: bool) -> None:
        pid, epoch = self._ids.producer_id, self._ids.producer_epoch
        last = self.last_error
        skip_end = skips_end_txn(_code(last) if last is not None else None, commit=commit)
        try:
            if self._started and not skip_end:
                pid, epoch = await self._req.end_txn(
                    commit=commit, producer_id=pid, producer_epoch=epoch, txn_version=self.version
                )
            if not commit and self._bump_after_abort:
                pid, epoch = await self._req.init_producer_id(pid, epoch)  # KIP-360 epoch bump
        except KafkaError as exc:
            timed_out = isinstance(exc, KafkaTimeoutError)
            failure = end_txn_failure(_code(exc), commit=commit, retriable=exc.retriable, timed_out=timed_out)
            if failure is EndFailure.FATAL:
                raise self._fatal(exc) from None
            if failure is EndFailure.ABORTABLE:
                raise self._abortable(exc) from None
            raise  # retries ran out of time: the same call may be made again
        if self.version >= 2 and self._started and not skip_end:
            self._check_bumped(commit, pid, epoch)
        if (pid, epoch) != (self._ids.producer_id, self._ids.producer_epoch) or self._bump_after_abort:
            self._ids.adopt(pid, epoch, transactional=True)
        self._partitions.clear()
        self._unverified.clear()
        self._started = False
        self._bump_after_abort = False
        self.last_error = None
        self._transition(TxnState.READY)

    def _check_bumped(self, commit: bool, pid: int, epoch: int) -> None:
        """EndTxn v5 answers with the id and epoch to use next (KIP-890): the same producer id at
        a higher epoch (the same one when the coordinator ran the transaction as version 1), or
        a new id at epoch 0. Anything else cannot be used: the transaction ended, but this
        producer no longer knows its epoch (fatal)."""
        old_pid, old_epoch = self._ids.producer_id, self._ids.producer_epoch
        same_id_later = pid == old_pid and epoch >= old_epoch
        if 0 <= epoch < MAX_EPOCH and (same_id_later or (pid >= 0 and pid != old_pid and epoch == 0)):
            return
        raise self._fatal(
            KafkaProtocolError(
                f"EndTxn({self.transactional_id}, {'commit' if commit else 'abort'}) from node "
                f"{self._req.coordinator_id}: fields 'producer_id', 'producer_epoch' ({pid}, {epoch}) cannot "
                f"follow ({old_pid}, {old_epoch}) (the same id at an epoch as high, or a new id at epoch 0); "
                f"the transaction was {'committed' if commit else 'aborted'}, but this producer cannot "
                "go on: create a new one"
            )
        )

    def metrics(self) -> dict[str, Any]:
        lat = sorted(self.commit_latency_ms)

        def pct(q: float) -> float | None:
            return round(lat[min(len(lat) - 1, int(q * len(lat)))], 2) if lat else None

        return {
            "transactional_id": self.transactional_id,
            "transaction_version": self.version,
            "transaction_state": self.state.value,
            "transactions_committed": self.committed,
            "transactions_aborted": self.aborted,
            "commit_latency_ms_p50": pct(0.5),
            "commit_latency_ms_p99": pct(0.99),
            "transaction_coordinator": self._req.coordinator_id,
            "transaction_coordinator_lookups": self._req.coordinator_lookups,
            "transaction_retries": dict(self._req.retries),
        }


class TransactionContext:
    """``async with producer.transaction():`` commits on success, aborts on an exception."""

    def __init__(self, manager: Callable[[], TransactionManager]) -> None:
        self._manager = manager

    async def __aenter__(self) -> TransactionContext:
        # the producer's state is checked here, not when transaction() is called (aiokafka)
        self._txn = self._manager()
        self._txn.begin()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            await self._txn.commit()
        elif self._txn.state is not TxnState.FATAL_ERROR:
            with anyio.CancelScope(shield=isinstance(exc, anyio.get_cancelled_exc_class())):
                await self._txn.abort()
