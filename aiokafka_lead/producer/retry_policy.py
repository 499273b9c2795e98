"""The producer's retry decisions: pure and synchronous, in one place.

The sender and the transaction manager ask; they apply the answer (complete, split, requeue,
fail, refresh metadata, bump the epoch, change the transaction's state). Nothing here does
I/O, reads a clock or changes a batch: every input is an argument, so each decision is a row
of a table (``tests/unit/producer/test_retry_policy.py``).

The steps, in the order the sender applies them:

1. :func:`classify_partition`: what one partition's answer in a Produce response means;
   :func:`classify_request_failure`: what a request without a usable answer means.
2. :func:`decide_retry`: whether a failed batch goes again, and after how long.
3. :func:`retry_ready_at`: when a requeued batch may be drained again.
4. :func:`txn_batch_failure`, :func:`is_fatal`, :func:`end_txn_failure`,
   :func:`skips_end_txn`: what a failure means for a transaction.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.error_code import INVALID_METADATA_CODES, ErrorCode

# ------------------------------------------------------------- error code sets

#: after these a transactional producer cannot continue (Java's fatal errors)
FATAL_CODES = frozenset({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ErrorCode.UNSUPPORTED_VERSION,
    ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
    # from a coordinator; from Produce it is abortable (KIP-588)
    ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.INVALID_TXN_STATE,
    ErrorCode.INVALID_TRANSACTION_TIMEOUT,
    ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.PRODUCER_FENCED,
})
#: fatal even when a Produce response carries them
FATAL_PRODUCE_CODES = frozenset({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.PRODUCER_FENCED,
})
#: after these the producer's sequences are unknown: a transaction's abort also bumps the
#: epoch (KIP-360)
BUMP_CODES = frozenset({
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    ErrorCode.UNKNOWN_PRODUCER_ID,
})
#: an idempotent (not transactional) producer's state on the broker is lost: bump the epoch,
#: then retry (KIP-360)
LOST_PRODUCER_STATE = frozenset({
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    ErrorCode.UNKNOWN_PRODUCER_ID,
})
#: the partition's records are written (a duplicate was written before)
WRITTEN_CODES = frozenset({ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER})


# ------------------------------------------------------- 1. one partition's answer


class Verdict(enum.Enum):
    WRITTEN = "written"  # complete the batch
    SPLIT = "split"  # MESSAGE_TOO_LARGE, several records: split, send the parts (not a retry)
    TOO_LARGE = "too_large"  # MESSAGE_TOO_LARGE, one record: fail it alone, give back its sequence
    RETRY = "retry"  # a failure: :func:`decide_retry` says whether it goes again


@dataclass(frozen=True, slots=True)
class PartitionDecision:
    verdict: Verdict
    #: NOT_LEADER_OR_FOLLOWER: the response's leader hint goes to the metadata store (KIP-951)
    apply_leader_hint: bool = False
    #: another invalid-metadata error: ask for a metadata refresh
    refresh_metadata: bool = False
    #: retried even though the error is not retriable
    force_retry: bool = False
    #: refused only because an earlier batch of the partition is not written yet: no backoff
    behind_earlier: bool = False
    #: the broker lost the idempotent producer's state: bump the epoch before the retry
    bump_epoch: bool = False


_WRITTEN = PartitionDecision(Verdict.WRITTEN)
_SPLIT = PartitionDecision(Verdict.SPLIT)
_TOO_LARGE = PartitionDecision(Verdict.TOO_LARGE)
_BEHIND_EARLIER = PartitionDecision(Verdict.RETRY, force_retry=True, behind_earlier=True)
#: the response has no answer for a partition it was sent: retried as if the request failed
MISSING_PARTITION = PartitionDecision(Verdict.RETRY, force_retry=True)


@dataclass(frozen=True, slots=True)
class RequestFailure:
    """A Produce request that got no usable answer: every batch in it is retried or failed."""

    #: the request failed with a retriable error: ask for a metadata refresh
    refresh_metadata: bool
    #: the answer could not be decoded: the broker may have written the batches, so they are
    #: retried as after a cut connection (an idempotent resend keeps its sequences)
    outcome_unknown: bool


def classify_request_failure(*, undecodable: bool, retriable: bool) -> RequestFailure:
    """What a failed Produce request (an error raised, or an undecodable answer) means."""
    if undecodable:
        return RequestFailure(refresh_metadata=False, outcome_unknown=True)
    return RequestFailure(refresh_metadata=retriable, outcome_unknown=False)


def classify_partition(
    code: int,
    *,
    record_count: int,
    earlier_unresolved: bool,
    idempotent: bool,
    transactional: bool,
) -> PartitionDecision:
    """What the Produce answer ``code`` for one batch means.

    ``earlier_unresolved``: a batch sent before this one for its partition is still in flight
    or queued again (then OUT_OF_ORDER_SEQUENCE_NUMBER only means "wait for it").
    """
    if code in WRITTEN_CODES:
        return _WRITTEN
    if code == ErrorCode.MESSAGE_TOO_LARGE:
        return _SPLIT if record_count > 1 else _TOO_LARGE
    hint = refresh = False
    if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        hint = True
    elif code in INVALID_METADATA_CODES:
        refresh = True
    elif code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and earlier_unresolved:
        return _BEHIND_EARLIER
    # a transactional producer aborts instead (the transaction manager bumps the epoch)
    lost = code in LOST_PRODUCER_STATE and idempotent and not transactional
    return PartitionDecision(
        Verdict.RETRY, apply_leader_hint=hint, refresh_metadata=refresh, force_retry=lost, bump_epoch=lost
    )


# ------------------------------------------------------------ 2. retry or fail


class RetryAction(enum.Enum):
    FAIL = "fail"  # fail the batch with the error
    EXPIRE = "expire"  # fail the batch with a delivery timeout naming the error
    RETRY = "retry"  # requeue it


@dataclass(frozen=True, slots=True)
class RetryDecision:
    action: RetryAction
    #: how long after now the batch may go again
    delay_s: float = 0.0
    #: without leader hints the batch also waits for metadata newer than this failure
    wait_for_metadata: bool = False


_FAIL = RetryDecision(RetryAction.FAIL)
_EXPIRE = RetryDecision(RetryAction.EXPIRE)
_RETRY_NOW = RetryDecision(RetryAction.RETRY)


def decide_retry(
    *,
    retriable: bool,
    force: bool,
    behind_earlier: bool,
    failures: int,
    age_s: float,
    delivery_timeout_s: float,
    backoff: ExponentialBackoff,
) -> RetryDecision:
    """Whether a batch that failed goes again: ``failures`` before this one, ``age_s`` since
    it was created. Not retriable (nor forced): fail; past delivery_timeout_ms: expire;
    else retry after the backoff for its failure count (at once when ``behind_earlier``)."""
    if not (retriable or force):
        return _FAIL
    if age_s >= delivery_timeout_s:
        return _EXPIRE
    if behind_earlier:
        return _RETRY_NOW
    return RetryDecision(RetryAction.RETRY, backoff.delay_s(failures), wait_for_metadata=True)


# ---------------------------------------------------------- 3. when a retry goes

NOT_YET = float("inf")


def retry_ready_at(
    *,
    retry_at: float,
    hints: bool,
    sent_epoch: int,
    leader_epoch: int,
    last_refresh: float,
    last_failure: float,
) -> float:
    """When a requeued batch may be drained: at once if the leader moved since it was sent
    (KIP-951, with hints); without hints, not before metadata newer than its failure
    (:data:`NOT_YET`); otherwise at ``retry_at`` (its backoff)."""
    if hints and leader_epoch > sent_epoch:
        return 0.0
    if not hints and last_refresh < last_failure:
        return NOT_YET
    return retry_at


# --------------------------------------------------------------- 4. transactions


def is_fatal(code: int) -> bool:
    """A coordinator's answer after which the transactional producer cannot continue."""
    return code in FATAL_CODES


@dataclass(frozen=True, slots=True)
class TxnBatchFailure:
    fatal: bool  # else the transaction must abort
    bump_after_abort: bool  # the abort also bumps the epoch (its sequence may have been written)


def txn_batch_failure(code: int, *, timed_out: bool) -> TxnBatchFailure:
    """A batch of the transaction failed for good with ``code`` (-1 when not a broker code)."""
    return TxnBatchFailure(
        fatal=code in FATAL_PRODUCE_CODES, bump_after_abort=code in BUMP_CODES or timed_out
    )


class EndFailure(enum.Enum):
    FATAL = "fatal"  # the producer cannot continue
    ABORTABLE = "abortable"  # the commit failed: only an abort is allowed now
    AGAIN = "again"  # the same call may be made again (retries ran out of time)


def end_txn_failure(code: int, *, commit: bool, retriable: bool, timed_out: bool) -> EndFailure:
    """EndTxn (or the abort's epoch bump) failed with ``code``."""
    if code in FATAL_CODES:
        return EndFailure.FATAL
    if commit and not (retriable or timed_out):
        return EndFailure.ABORTABLE  # e.g. TRANSACTION_ABORTABLE (KIP-890)
    return EndFailure.AGAIN


def skips_end_txn(last_error_code: int | None, *, commit: bool) -> bool:
    """An abort after INVALID_PRODUCER_ID_MAPPING sends no EndTxn (the coordinator would reject
    it); the epoch bump aborts the transaction."""
    return not commit and last_error_code == ErrorCode.INVALID_PRODUCER_ID_MAPPING
