"""The producer's retry decisions as tables: each row one outcome and what the policy says."""

from __future__ import annotations

import random

import pytest

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import IllegalStateError
from aiokafka_lead.producer.retry_policy import (
    MISSING_PARTITION,
    NOT_YET,
    EndFailure,
    PartitionDecision,
    RetryAction,
    Verdict,
    classify_partition,
    classify_request_failure,
    decide_retry,
    end_txn_failure,
    is_fatal,
    retry_ready_at,
    skips_end_txn,
    txn_batch_failure,
)
from aiokafka_lead.producer.transaction import TRANSITIONS, TransactionManager, TxnState

RETRY = Verdict.RETRY
HINT = PartitionDecision(RETRY, apply_leader_hint=True)
REFRESH = PartitionDecision(RETRY, refresh_metadata=True)
PLAIN = PartitionDecision(RETRY)
BUMP = PartitionDecision(RETRY, force_retry=True, bump_epoch=True)
BEHIND = PartitionDecision(RETRY, force_retry=True, behind_earlier=True)


@pytest.mark.parametrize(
    ("code", "records", "earlier", "idempotent", "transactional", "expected"),
    [
        (E.NONE, 1, False, False, False, PartitionDecision(Verdict.WRITTEN)),
        (E.DUPLICATE_SEQUENCE_NUMBER, 3, False, True, False, PartitionDecision(Verdict.WRITTEN)),
        (E.MESSAGE_TOO_LARGE, 2, False, False, False, PartitionDecision(Verdict.SPLIT)),
        (E.MESSAGE_TOO_LARGE, 1, False, True, False, PartitionDecision(Verdict.TOO_LARGE)),
        (E.NOT_LEADER_OR_FOLLOWER, 1, False, False, False, HINT),
        (E.NOT_LEADER_OR_FOLLOWER, 1, True, True, True, HINT),
        (E.UNKNOWN_TOPIC_OR_PARTITION, 1, False, False, False, REFRESH),
        (E.LEADER_NOT_AVAILABLE, 1, False, False, False, REFRESH),
        (E.KAFKA_STORAGE_ERROR, 1, False, False, False, REFRESH),
        (E.REQUEST_TIMED_OUT, 1, False, False, False, PLAIN),
        (E.NOT_ENOUGH_REPLICAS, 1, False, True, False, PLAIN),
        (E.CORRUPT_MESSAGE, 1, False, False, False, PLAIN),
        (E.TOPIC_AUTHORIZATION_FAILED, 1, False, False, False, PLAIN),
        # an earlier batch of the partition is not written yet: wait for it, not lost state
        (E.OUT_OF_ORDER_SEQUENCE_NUMBER, 1, True, True, False, BEHIND),
        (E.OUT_OF_ORDER_SEQUENCE_NUMBER, 1, True, True, True, BEHIND),
        # idempotent only: the broker lost our state, bump the epoch (KIP-360)
        (E.OUT_OF_ORDER_SEQUENCE_NUMBER, 1, False, True, False, BUMP),
        (E.UNKNOWN_PRODUCER_ID, 1, False, True, False, BUMP),
        (E.UNKNOWN_PRODUCER_ID, 1, True, True, False, BUMP),
        # transactional: the transaction aborts instead (no bump here, no forced retry)
        (E.OUT_OF_ORDER_SEQUENCE_NUMBER, 1, False, True, True, PLAIN),
        (E.UNKNOWN_PRODUCER_ID, 1, False, True, True, PLAIN),
        # not idempotent: no producer state to lose
        (E.OUT_OF_ORDER_SEQUENCE_NUMBER, 1, False, False, False, PLAIN),
        (9999, 1, False, False, False, PLAIN),  # a code this client does not know
    ],
)
def test_classify_partition(
    code: int, records: int, earlier: bool, idempotent: bool, transactional: bool, expected: PartitionDecision
) -> None:
    flags = {"earlier_unresolved": earlier, "idempotent": idempotent, "transactional": transactional}
    assert classify_partition(code, record_count=records, **flags) == expected


@pytest.mark.parametrize(
    ("undecodable", "retriable", "refresh", "unknown"),
    [
        (False, True, True, False),  # a cut connection, a timeout: refresh, retry
        (False, False, False, False),  # e.g. an authentication failure: fails the batches
        (True, False, False, True),  # an undecodable answer: retried as after a cut connection
    ],
)
def test_classify_request_failure(undecodable: bool, retriable: bool, refresh: bool, unknown: bool) -> None:
    got = classify_request_failure(undecodable=undecodable, retriable=retriable)
    assert (got.refresh_metadata, got.outcome_unknown) == (refresh, unknown)


def test_a_missing_partition_is_retried_as_a_failed_request() -> None:
    assert PartitionDecision(RETRY, force_retry=True) == MISSING_PARTITION


NO_JITTER = ExponentialBackoff(100, 1000, jitter=0, rng=random.Random(0))
Row = tuple[RetryAction, float, bool]


@pytest.mark.parametrize(
    ("retriable", "force", "behind", "n", "age", "expected"),
    [
        (False, False, False, 0, 0.0, (RetryAction.FAIL, 0.0, False)),
        (False, False, False, 0, 99.0, (RetryAction.FAIL, 0.0, False)),  # not retriable wins
        (True, False, False, 0, 0.0, (RetryAction.RETRY, 0.1, True)),
        (True, False, False, 1, 0.0, (RetryAction.RETRY, 0.2, True)),
        (True, False, False, 3, 0.0, (RetryAction.RETRY, 0.8, True)),
        (True, False, False, 10, 0.0, (RetryAction.RETRY, 1.0, True)),  # capped at the maximum
        (False, True, False, 0, 0.0, (RetryAction.RETRY, 0.1, True)),  # forced (lost state)
        (False, True, True, 2, 0.0, (RetryAction.RETRY, 0.0, False)),  # behind an earlier batch
        (True, False, False, 0, 30.0, (RetryAction.EXPIRE, 0.0, False)),  # at the deadline
        (True, False, False, 0, 31.0, (RetryAction.EXPIRE, 0.0, False)),
        (False, True, True, 0, 30.0, (RetryAction.EXPIRE, 0.0, False)),
    ],
)
def test_decide_retry(retriable: bool, force: bool, behind: bool, n: int, age: float, expected: Row) -> None:
    got = decide_retry(
        retriable=retriable, force=force, behind_earlier=behind, failures=n, age_s=age,
        delivery_timeout_s=30.0, backoff=NO_JITTER,
    )
    assert (got.action, round(got.delay_s, 6), got.wait_for_metadata) == expected


def test_decide_retry_backoff_is_jittered_within_its_bounds() -> None:
    backoff = ExponentialBackoff(100, 1000, jitter=0.2, rng=random.Random(7))
    delays = {
        decide_retry(
            retriable=True,
            force=False,
            behind_earlier=False,
            failures=1,
            age_s=0.0,
            delivery_timeout_s=30.0,
            backoff=backoff,
        ).delay_s
        for _ in range(50)
    }
    assert len(delays) > 1
    assert all(0.16 <= d <= 0.24 for d in delays)


@pytest.mark.parametrize(
    ("hints", "sent_epoch", "leader_epoch", "last_refresh", "last_failure", "expected"),
    [
        (True, 3, 4, 0.0, 10.0, 0.0),  # the leader moved since the batch went: at once (KIP-951)
        (True, 3, 3, 0.0, 10.0, 12.0),  # same leader: after its backoff
        (True, 3, 2, 20.0, 10.0, 12.0),
        (False, 3, 4, 5.0, 10.0, NOT_YET),  # no hints: wait for metadata newer than the failure
        (False, 3, 3, 10.0, 10.0, 12.0),
        (False, 3, 3, 11.0, 10.0, 12.0),
    ],
)
def test_retry_ready_at(
    hints: bool, sent_epoch: int, leader_epoch: int, last_refresh: float, last_failure: float, expected: float
) -> None:
    epochs = {"sent_epoch": sent_epoch, "leader_epoch": leader_epoch}
    times = {"retry_at": 12.0, "last_refresh": last_refresh, "last_failure": last_failure}
    assert retry_ready_at(hints=hints, **epochs, **times) == expected


@pytest.mark.parametrize(
    ("code", "fatal"),
    [
        (E.PRODUCER_FENCED, True),
        (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, True),
        (E.CLUSTER_AUTHORIZATION_FAILED, True),
        (E.INVALID_PRODUCER_EPOCH, True),
        (E.INVALID_TXN_STATE, True),
        (E.TRANSACTION_COORDINATOR_FENCED, True),
        (E.UNSUPPORTED_VERSION, True),
        (E.CONCURRENT_TRANSACTIONS, False),
        (E.NOT_COORDINATOR, False),
        (E.TRANSACTION_ABORTABLE, False),
        (-1, False),
    ],
)
def test_is_fatal_for_a_coordinator_answer(code: int, fatal: bool) -> None:
    assert is_fatal(code) is fatal


@pytest.mark.parametrize(
    ("code", "timed_out", "fatal", "bump"),
    [
        (E.PRODUCER_FENCED, False, True, False),
        (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, False, True, False),
        # from a Produce response INVALID_PRODUCER_EPOCH is abortable (KIP-588)
        (E.INVALID_PRODUCER_EPOCH, False, False, False),
        (E.OUT_OF_ORDER_SEQUENCE_NUMBER, False, False, True),
        (E.UNKNOWN_PRODUCER_ID, False, False, True),
        (E.INVALID_PRODUCER_ID_MAPPING, False, False, True),
        (E.NOT_ENOUGH_REPLICAS, False, False, False),
        (-1, True, False, True),  # a delivery timeout: the sequence may have been written
    ],
)
def test_txn_batch_failure(code: int, timed_out: bool, fatal: bool, bump: bool) -> None:
    got = txn_batch_failure(code, timed_out=timed_out)
    assert (got.fatal, got.bump_after_abort) == (fatal, bump)


@pytest.mark.parametrize(
    ("code", "commit", "retriable", "timed_out", "expected"),
    [
        (E.PRODUCER_FENCED, True, False, False, EndFailure.FATAL),
        (E.PRODUCER_FENCED, False, False, False, EndFailure.FATAL),
        (E.TRANSACTION_ABORTABLE, True, False, False, EndFailure.ABORTABLE),
        (E.TRANSACTION_ABORTABLE, False, False, False, EndFailure.AGAIN),
        (E.CONCURRENT_TRANSACTIONS, True, True, False, EndFailure.AGAIN),
        (-1, True, True, True, EndFailure.AGAIN),
    ],
)
def test_end_txn_failure(
    code: int, commit: bool, retriable: bool, timed_out: bool, expected: EndFailure
) -> None:
    assert end_txn_failure(code, commit=commit, retriable=retriable, timed_out=timed_out) is expected


@pytest.mark.parametrize(
    ("last", "commit", "skip"),
    [
        (E.INVALID_PRODUCER_ID_MAPPING, False, True),
        (E.INVALID_PRODUCER_ID_MAPPING, True, False),
        (E.OUT_OF_ORDER_SEQUENCE_NUMBER, False, False),
        (None, False, False),
    ],
)
def test_skips_end_txn(last: int | None, commit: bool, skip: bool) -> None:
    assert skips_end_txn(last, commit=commit) is skip


# ------------------------------------------------------------------ transition table

S = TxnState
ALLOWED = {
    (S.UNINITIALIZED, S.READY),
    (S.READY, S.IN_TRANSACTION),
    (S.IN_TRANSACTION, S.COMMITTING),
    (S.IN_TRANSACTION, S.ABORTING),
    (S.IN_TRANSACTION, S.ABORTABLE_ERROR),
    (S.COMMITTING, S.COMMITTING),
    (S.COMMITTING, S.READY),
    (S.COMMITTING, S.ABORTABLE_ERROR),
    (S.ABORTING, S.ABORTING),
    (S.ABORTING, S.READY),
    (S.ABORTABLE_ERROR, S.ABORTING),
} | {(s, S.FATAL_ERROR) for s in S if s is not S.FATAL_ERROR}


def test_the_transition_table_is_the_one_documented() -> None:
    assert {(a, b) for a, targets in TRANSITIONS.items() for b in targets} == ALLOWED
    assert set(TRANSITIONS) == set(S)


def _manager_in(state: TxnState) -> TransactionManager:
    manager = TransactionManager.__new__(TransactionManager)
    manager.state = state
    manager._req = type("Req", (), {"transactional_id": "t"})()  # type: ignore[assignment]
    return manager


@pytest.mark.parametrize(("start", "to"), [(a, b) for a in S for b in S])
def test_transition_follows_the_table(start: TxnState, to: TxnState) -> None:
    manager = _manager_in(start)
    if (start, to) in ALLOWED:
        manager._transition(to)
        assert manager.state is to
    else:
        with pytest.raises(IllegalStateError, match=f"from state {start.value} to {to.value}"):
            manager._transition(to)
        assert manager.state is start
