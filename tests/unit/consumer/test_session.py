"""KIP-227 fetch session bookkeeping: what goes in each request."""

from __future__ import annotations

from aiokafka_lead.consumer.session import FINAL_EPOCH, FetchSession, PartitionFetch
from aiokafka_lead.structs import TopicPartition

A, B, C = (TopicPartition("t", p) for p in range(3))


def pf(offset: int, epoch: int = 0) -> PartitionFetch:
    return PartitionFetch(offset, epoch, epoch, 1 << 20)


def test_full_then_incremental_then_forget() -> None:
    session = FetchSession()
    first = session.plan({A: pf(0), B: pf(0)})
    assert (first.session_id, first.session_epoch, set(first.to_send)) == (0, 0, {A, B})
    session.on_response(first, 0, 42)
    # nothing changed: an empty incremental request
    second = session.plan({A: pf(0), B: pf(0)})
    assert (second.session_id, second.session_epoch, second.to_send, second.forgotten) == (42, 1, {}, ())
    session.on_response(second, 0, 42)
    # A advanced, B has buffered data (not wanted), C is new
    third = session.plan({A: pf(5), C: pf(0)})
    assert (third.session_epoch, set(third.to_send), third.forgotten) == (2, {A, C}, (B,))
    session.on_response(third, 0, 42)
    fourth = session.plan({A: pf(5), C: pf(0), B: pf(3)})
    assert (set(fourth.to_send), fourth.forgotten) == ({B}, ())


def test_errors_and_declined_sessions_fall_back_to_full_fetches() -> None:
    session = FetchSession()
    plan = session.plan({A: pf(0)})
    session.on_response(plan, 0, 0)  # the broker has no session to give
    again = session.plan({A: pf(0)})
    assert (again.session_id, again.session_epoch, set(again.to_send)) == (0, 0, {A})
    session.on_response(again, 0, 7)
    incremental = session.plan({A: pf(1)})
    session.on_response(incremental, 71, 0)  # INVALID_FETCH_SESSION_EPOCH
    assert session.plan({A: pf(1)}).full
    session.reset()
    assert session.session_id == 0 and FINAL_EPOCH == -1
