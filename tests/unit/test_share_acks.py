"""Share consumer bookkeeping without I/O: acknowledgement batches, the ledger's modes, and
the share session's requests."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiokafka_lead.errors import IllegalStateError
from aiokafka_lead.records import Record
from aiokafka_lead.share.acks import AckLedger
from aiokafka_lead.share.acquire import c_build_share_records, py_build_share_records
from aiokafka_lead.share.buffer import ShareBuffer
from aiokafka_lead.share.config import ShareConsumerConfig
from aiokafka_lead.share.records import GAP, AcknowledgeType, ShareConsumerRecord
from aiokafka_lead.share.runs import AckBatch, Acks, gaps, settle, spans, without
from aiokafka_lead.share.session import CLOSE_EPOCH, ShareSession
from aiokafka_lead.structs import TopicPartition

TP = TopicPartition("t", 0)
TID = uuid.UUID(int=7)
SETTINGS = ShareConsumerConfig(group_id="g", fetch_max_wait_ms=500, fetch_max_bytes=1000, max_poll_records=10)


def record(offset: int, tp: TopicPartition = TP) -> ShareConsumerRecord[bytes, bytes]:
    return ShareConsumerRecord(tp.topic, tp.partition, offset, 0, 0, None, b"v", None, -1, 1, (), -1, 1, 0.0)


def taken(ledger: AckLedger, node_id: int) -> dict[TopicPartition, dict[int, int]]:
    """What ``ledger.take`` hands out, offset by offset."""
    return {tp: acks.by_offset() for tp, acks in ledger.take(node_id).items()}


def test_ack_batches_split_at_holes_and_compress_single_types() -> None:
    acks = {5: 1, 6: 1, 7: 1, 9: 2, 10: 3, 11: 0}
    assert Acks.of(acks).batches() == [AckBatch(5, 7, (1,)), AckBatch(9, 11, (2, 3, 0))]
    assert Acks.of({}).batches() == []


def test_implicit_mode_accepts_the_last_poll_at_the_next() -> None:
    ledger = AckLedger(explicit=False)
    ledger.acquired(TP, 1, gaps=[(3, 3)])
    ledger.delivered([[record(1), record(2)]])
    ledger.acknowledge(record(2), AcknowledgeType.RELEASE)
    ledger.before_poll()
    assert taken(ledger, 1) == {TP: {1: AcknowledgeType.ACCEPT, 2: AcknowledgeType.RELEASE, 3: GAP}}
    assert taken(ledger, 1) == {}


def test_explicit_mode_refuses_a_poll_until_every_record_is_settled() -> None:
    ledger = AckLedger(explicit=True)
    ledger.acquired(TP, 1, gaps=[])
    ledger.delivered([[record(1), record(2)]])
    ledger.acknowledge(record(1), AcknowledgeType.ACCEPT)
    with pytest.raises(IllegalStateError, match=r"1 delivered record\(s\) not acknowledged \(t-0@2\)"):
        ledger.before_poll()
    ledger.acknowledge(record(2), AcknowledgeType.RENEW)
    ledger.before_poll()  # a renewed record does not block, but stays to be settled
    ledger.acknowledge(record(2), AcknowledgeType.REJECT)
    assert taken(ledger, 1) == {TP: {1: AcknowledgeType.ACCEPT, 2: AcknowledgeType.REJECT}}
    with pytest.raises(IllegalStateError, match="not awaiting acknowledgement"):
        ledger.acknowledge(record(2), AcknowledgeType.ACCEPT)


def test_close_releases_what_is_unsettled_and_acks_go_to_their_node() -> None:
    other = TopicPartition("t", 1)
    ledger = AckLedger(explicit=True)
    ledger.acquired(TP, 1, gaps=[])
    ledger.acquired(other, 2, gaps=[])
    ledger.delivered([[record(1)], [record(5, other)]])
    ledger.release_all()
    assert ledger.pending_nodes() == {1, 2}
    assert taken(ledger, 2) == {other: {5: AcknowledgeType.RELEASE}}
    assert taken(ledger, 1) == {TP: {1: AcknowledgeType.RELEASE}}


def test_requeued_acknowledgements_do_not_override_newer_ones() -> None:
    ledger = AckLedger(explicit=True)
    ledger.acquired(TP, 1, gaps=[])
    ledger.delivered([[record(1)]])
    ledger.acknowledge(record(1), AcknowledgeType.RENEW)
    sent = ledger.take(1)
    ledger.acknowledge(record(1), AcknowledgeType.ACCEPT)
    ledger.requeue(sent)
    assert taken(ledger, 1) == {TP: {1: AcknowledgeType.ACCEPT}}


def test_session_opens_with_every_partition_then_sends_only_changes() -> None:
    session = ShareSession(1)
    tp1 = TopicPartition("t", 1)
    with pytest.raises(ValueError, match="cannot open"):
        session.fetch_request("m", SETTINGS, {TP: TID}, {TP: Acks.of({1: 1})})
    request, after = session.fetch_request("m", SETTINGS, {TP: TID, tp1: TID}, {})
    assert request.share_session_epoch == 0
    assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in request.topics] == [
        (TID, [0, 1])
    ]
    session.advance()
    session.partitions = after
    # partition 1 leaves; partition 0 only carries acknowledgements (one RENEW: IsRenewAck)
    request, after = session.fetch_request("m", SETTINGS, {TP: TID}, {TP: Acks.of({4: 4, 5: 1})})
    assert request.share_session_epoch == 1
    assert request.is_renew_ack
    [topic] = request.topics
    [part] = topic.partitions
    batches = [(b.first_offset, b.last_offset, b.acknowledge_types) for b in part.acknowledgement_batches]
    assert batches == [(4, 5, [4, 1])]
    assert [(f.topic_id, f.partitions) for f in request.forgotten_topics_data] == [(TID, [1])]
    assert after == {TP: TID}
    closing = session.acknowledge_request("g", "m", {TP: Acks.of({6: 2})}, {"t": TID}, close=True)
    assert closing.share_session_epoch == CLOSE_EPOCH
    assert not closing.is_renew_ack
    session.reset()
    assert session.epoch == 0 and session.partitions == {}


def test_session_epoch_wraps_to_one() -> None:
    session = ShareSession(1)
    session.epoch = 2**31 - 1
    session.advance()
    assert session.epoch == 1


@st.composite
def _acquired(draw: st.DrawFn) -> tuple[list[tuple[int, int, int]], list[int]]:
    """Sorted, disjoint acquired ranges and the offsets a response's records carry (any
    order, repeats, some outside the ranges)."""
    ranges = []
    start = draw(st.integers(0, 5))
    for _ in range(draw(st.integers(1, 4))):
        first = start + draw(st.integers(0, 3))
        last = first + draw(st.integers(0, 6))
        ranges.append((first, last, draw(st.integers(1, 5))))
        start = last + 1
    offsets = draw(st.lists(st.integers(0, start + 3), max_size=30))
    if draw(st.booleans()):
        offsets.sort()
    return ranges, offsets


Acquired = tuple[list[tuple[int, int, int]], list[int]]


def _rows(offsets: list[int]) -> list[Record]:
    return [
        Record(o, 1000 + o, None if o % 3 else b"k", b"v%d" % o, (("h", b"x"),) if o % 2 else ())
        for o in offsets
    ]


@given(_acquired())
def test_share_records_and_gaps_match_a_plain_scan(case: Acquired) -> None:
    ranges, offsets = case
    rows = _rows(offsets)
    built = py_build_share_records(rows, "t", 0, 0, 5, ranges, 9.5, 0)
    expected, floor = [], 0
    for o in offsets:
        count = next((c for f, la, c in ranges if f <= o <= la), None)
        if o >= floor and count is not None and (not expected or o > expected[-1][0]):
            expected.append((o, count))
            floor = o + 1
    if offsets == sorted(offsets):
        assert [(r.offset, r.delivery_count) for r in built] == expected
    got = sorted({r.offset for r in built})
    plain = [o for f, la, _ in ranges for o in range(f, la + 1) if o not in set(got)]
    assert [o for f, la in gaps(ranges, spans(got)) for o in range(f, la + 1)] == plain


@given(_acquired(), st.integers(0, 8))
def test_c_share_records_equal_the_python_ones(case: Acquired, floor: int) -> None:
    assert c_build_share_records is not None, "the C extension is built for the tests (make test builds it)"
    ranges, offsets = case
    rows = _rows(offsets)
    c = c_build_share_records(rows, "t", 3, 1, 7, ranges, 9.5, floor)
    py = py_build_share_records(rows, "t", 3, 1, 7, ranges, 9.5, floor)
    assert c == py
    assert all(type(r) is ShareConsumerRecord for r in c)
    shared = {id(row.headers) for row in rows}
    assert all(id(r.headers) in shared for r in c)  # immutable, so shared with the decoded record


def test_c_share_records_refuse_foreign_rows_and_ranges() -> None:
    assert c_build_share_records is not None, "the C extension is built for the tests (make test builds it)"
    with pytest.raises(TypeError, match="Record tuples"):
        c_build_share_records([(1, 2)], "t", 0, 0, -1, [(0, 5, 1)], 0.0, 0)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="int tuples"):
        c_build_share_records(_rows([1]), "t", 0, 0, -1, [(0, 5)], 0.0, 0)  # type: ignore[list-item]


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 4), st.integers(0, 4)), max_size=12))
def test_settled_runs_let_the_later_acknowledgement_win(made: list[tuple[int, int, int]]) -> None:
    runs = [(first, first + length, kind) for first, length, kind in made]
    by_offset: dict[int, int] = {}
    for first, last, kind in runs:
        by_offset.update(dict.fromkeys(range(first, last + 1), kind))
    settled = settle(runs)
    assert Acks(settled).by_offset() == by_offset
    assert all(a[1] < b[0] for a, b in itertools.pairwise(settled))


def test_without_cuts_offsets_out_of_spans() -> None:
    assert without([(0, 9), (20, 22)], [0, 4, 5, 9, 21]) == [(1, 3), (6, 8), (20, 20), (22, 22)]
    assert spans([1, 2, 3, 7, 8, 10]) == [(1, 3), (7, 8), (10, 10)]


def test_implicit_mode_keeps_renewed_records_and_accepts_the_rest() -> None:
    ledger = AckLedger(explicit=False)
    ledger.acquired(TP, 1, gaps=[])
    ledger.delivered([[record(1), record(2), record(3)]])
    ledger.acknowledge(record(2), AcknowledgeType.RENEW)
    ledger.before_poll()
    assert ledger.unsettled() == []
    accept, renew = AcknowledgeType.ACCEPT, AcknowledgeType.RENEW
    assert taken(ledger, 1) == {TP: {1: accept, 2: renew, 3: accept}}
    ledger.acknowledge(record(2), AcknowledgeType.ACCEPT)  # still awaiting its settling type
    assert taken(ledger, 1) == {TP: {2: AcknowledgeType.ACCEPT}}


@given(
    st.lists(st.integers(1, 30), min_size=1, max_size=6),
    st.lists(st.integers(1, 40), max_size=8),
)
def test_the_buffer_hands_out_records_in_order_and_gives_back_the_rest(
    sizes: list[int], takes: list[int]
) -> None:
    buffer = ShareBuffer()
    offset = 0
    for node_id, size in enumerate(sizes):
        chunk = [record(o) for o in range(offset, offset + size)]
        buffer.add(node_id % 2, [chunk], size)
        offset += size
    handed: list[int] = []
    for n in takes:
        before = len(buffer)
        chunks = buffer.take(n)
        got = [r.offset for chunk in chunks for r in chunk]
        assert len(got) == min(n, before) and all(chunks)
        assert len(buffer) == before - len(got)
        handed += got
    rest = [r.offset for chunk in buffer.take_all() for r in chunk]
    assert len(buffer) == 0
    assert sorted(handed + rest) == list(range(offset))
    assert len(set(handed + rest)) == offset


def test_acknowledgements_in_any_order_and_again_keep_the_latest_type() -> None:
    ledger = AckLedger(explicit=True)
    ledger.acquired(TP, 1, gaps=[(6, 7)])
    ledger.delivered([[record(o) for o in range(1, 6)]])
    renew, accept, reject = AcknowledgeType.RENEW, AcknowledgeType.ACCEPT, AcknowledgeType.REJECT
    for offset, kind in [(2, renew), (3, renew), (5, accept), (1, accept), (2, accept), (4, reject)]:
        ledger.acknowledge(record(offset), kind)
    ledger.before_poll()  # 3 is renewed: it does not block the poll
    [acks] = ledger.take(1).values()
    assert acks.by_offset() == {1: accept, 2: accept, 3: renew, 4: reject, 5: accept, 6: GAP, 7: GAP}
    assert acks.runs == [(1, 2, accept), (3, 3, renew), (4, 4, reject), (5, 5, accept), (6, 7, GAP)]
    ledger.acknowledge(record(3), accept)
    assert taken(ledger, 1) == {TP: {3: accept}}
