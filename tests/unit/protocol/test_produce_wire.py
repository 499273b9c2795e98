"""The Produce request and answer's C calls (``_speedups_produce_wire.c``) against the generated
codecs, byte for byte and field for field, and ``ProduceWire`` with and without them."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.protocol.framing import decode_response, encode_request, encode_response
from aiokafka_lead.protocol.messages import ProduceResponse
from aiokafka_lead.protocol.produce_wire import FIRST_VERSION, LAST_VERSION, SPLIT_OVER, ProduceWire, Written
from aiokafka_lead.records import native

VERSIONS = st.integers(FIRST_VERSION, LAST_VERSION)
names = st.text(min_size=1, max_size=20)
records = (
    st.none()
    | st.binary(max_size=300)
    | st.binary(min_size=200, max_size=400).map(memoryview)
    # a batch as (header, records): written one after the other, as if joined
    | st.tuples(st.binary(max_size=61), st.binary(max_size=300) | st.binary(max_size=300).map(memoryview))
)
topics = st.lists(
    st.tuples(names, st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), records), max_size=4)),
    max_size=4,
)
partition = ProduceResponse.PartitionProduceResponse
int64 = st.integers(-(2**63), 2**63 - 1)


def test_the_calls_come_from_the_extension() -> None:
    assert native.encode_produce is not None, native.unavailable_reason
    assert native.decode_produce_written is not None


@settings(max_examples=300, deadline=None)
@given(
    version=VERSIONS,
    correlation_id=st.integers(0, 2**31 - 1),
    client_id=st.none() | st.text(max_size=30),
    txn_id=st.none() | st.text(max_size=30),
    acks=st.sampled_from([-1, 0, 1]),
    timeout_ms=st.integers(0, 2**31 - 1),
    topics=topics,
)
def test_the_c_frame_is_the_generated_one(
    version: int,
    correlation_id: int,
    client_id: str | None,
    txn_id: str | None,
    acks: int,
    timeout_ms: int,
    topics: list[Any],
) -> None:
    wire = ProduceWire(txn_id, acks, timeout_ms, topics)
    generated = encode_request(wire.request(), version, correlation_id, client_id)
    assert native.encode_produce is not None
    c_frame = native.encode_produce(version, correlation_id, client_id, txn_id, acks, timeout_ms, topics)
    assert c_frame == generated
    assert wire.frame(version, correlation_id, client_id) == generated


@settings(max_examples=200, deadline=None)
@given(version=VERSIONS, topics=topics, split_over=st.integers(1, 300))
def test_a_frame_in_pieces_is_the_same_bytes_with_large_records_passed_through(
    version: int, topics: list[Any], split_over: int
) -> None:
    wire = ProduceWire("txn", -1, 30_000, topics)
    generated = encode_request(wire.request(), version, 5, "client")
    assert native.encode_produce is not None
    out = native.encode_produce(version, 5, "client", "txn", -1, 30_000, topics, split_over)
    rows = [rec for _, parts in topics for _, rec in parts if rec is not None]
    given = [rec[1] if isinstance(rec, tuple) else rec for rec in rows]
    split = [rec for rec in given if len(rec) >= split_over]
    if not split:
        assert out == generated
        return
    assert isinstance(out, list) and b"".join(out) == generated
    assert out[1::2] == split and all(a is b for a, b in zip(out[1::2], split, strict=True))  # not copied
    assert all(type(piece) is bytes for piece in out[0::2])


def test_large_records_make_the_request_frame_a_list_of_pieces() -> None:
    records = memoryview(b"r" * SPLIT_OVER)
    wire = ProduceWire(None, -1, 30_000, [("t", [(0, (b"h" * 61, records)), (1, b"small")])])
    out = wire.frame(10, 7, "c")
    assert isinstance(out, list) and out[1] is records
    assert b"".join(out) == encode_request(wire.request(), 10, 7, "c")


def test_other_versions_and_no_extension_take_the_generated_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    wire = ProduceWire(None, -1, 30_000, [("t", [(0, b"batch")])])
    for version in (3, 8, 13):
        assert wire.frame(version, 7, "c") == encode_request(wire.request(), version, 7, "c")
    assert native.encode_produce is not None
    with pytest.raises(ValueError, match="version 13"):
        native.encode_produce(13, 7, "c", None, -1, 30_000, [])
    monkeypatch.setattr(native, "encode_produce", None)
    assert wire.frame(10, 7, "c") == encode_request(wire.request(), 10, 7, "c")


@pytest.mark.parametrize(
    "topics",
    [
        "not a list",
        [("t",)],
        [("t", [(0,)])],
        [(1, [])],
        [("t", [("zero", b"")])],
        [("t", [(2**31, b"")])],
        [("t", [(0, 5)])],
        [("t", [(0, (b"head",))])],
        [("t", [(0, (b"head", b"records", b""))])],
        [("t", [(0, (b"head", 5))])],
        [("t", [(0, (5, b"records"))])],
        [("t", [(0, b"ok"), (1, (b"head", None))])],
    ],
)
def test_bad_rows_raise(topics: Any) -> None:
    assert native.encode_produce is not None
    with pytest.raises((TypeError, ValueError, OverflowError)):
        native.encode_produce(10, 1, None, None, -1, 1000, topics)


def _answer(version: int, rows: list[tuple[str, list[Any]]], throttle: int = 0) -> bytes:
    response = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(name=name, partition_responses=parts) for name, parts in rows
        ],
        throttle_time_ms=throttle,
    )
    return encode_response(response, version, 99)[4:]


def _c(frame: bytes | memoryview, version: int) -> Written | None:
    assert native.decode_produce_written is not None
    got = native.decode_produce_written(frame, version)
    return None if got is None else Written(*got)


def _generated(frame: bytes | memoryview, version: int) -> Written | None:
    """The generated decoder's reading, as a Written when it is the common case."""
    response = decode_response(frame, ProduceResponse, version)[1]
    rows = []
    for topic in response.responses:
        if topic.unknown_tagged_fields:
            return None
        for p in topic.partition_responses:
            if p.error_code or p.record_errors or p.error_message is not None or p.unknown_tagged_fields:
                return None
            if p.current_leader != ProduceResponse.LeaderIdAndEpoch():
                return None
            rows.append((topic.name, p.index, p.base_offset, p.log_append_time_ms, p.log_start_offset))
    if response.node_endpoints or response.unknown_tagged_fields:
        return None
    return Written(response.throttle_time_ms, rows)


written_partitions = st.lists(
    st.builds(
        partition,
        index=st.integers(-(2**31), 2**31 - 1),
        base_offset=int64,
        log_append_time_ms=int64,
        log_start_offset=int64,
    ),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(
    version=VERSIONS,
    rows=st.lists(st.tuples(names, written_partitions), max_size=4, unique_by=lambda row: row[0]),
    throttle=st.integers(-(2**31), 2**31 - 1),
)
def test_a_written_answer_reads_as_the_generated_decoder_reads_it(
    version: int, rows: list[Any], throttle: int
) -> None:
    frame = _answer(version, rows, throttle)
    expected = _generated(frame, version)
    assert expected is not None
    assert _c(frame, version) == expected
    assert _c(memoryview(frame), version) == expected
    generated = decode_response(frame, ProduceResponse, version)[1]
    generated.responses = [t for t in generated.responses if t.partition_responses]  # rows name none
    assert expected.response() == generated
    wire = ProduceWire(None, -1, 1000, [])
    wire.frame(version, 99, None)
    assert wire.decode(frame) == expected


def _written(**changes: Any) -> Any:
    fields: dict[str, Any] = {"index": 1, "base_offset": 10, "log_append_time_ms": -1, "log_start_offset": 0}
    fields.update(changes)
    return partition(**fields)


NOT_COMMON = {
    "an error": _written(error_code=6),
    "a record error": _written(record_errors=[ProduceResponse.BatchIndexAndErrorMessage(batch_index=0)]),
    "an error message": _written(error_message=""),
    "a leader hint": _written(current_leader=ProduceResponse.LeaderIdAndEpoch(leader_id=2, leader_epoch=5)),
}


@pytest.mark.parametrize("what", sorted(NOT_COMMON))
def test_any_other_answer_goes_to_the_generated_decoder(what: str) -> None:
    version = 10
    frame = _answer(version, [("t", [_written(index=0), NOT_COMMON[what]])])
    assert _c(frame, version) is None
    wire = ProduceWire(None, -1, 1000, [])
    wire.frame(version, 99, None)
    assert wire.decode(frame) == decode_response(frame, ProduceResponse, version)[1]


def test_node_endpoints_and_other_versions_go_to_the_generated_decoder() -> None:
    response = ProduceResponse(
        responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=[_written()])],
        node_endpoints=[ProduceResponse.NodeEndpoint(node_id=1, host="h", port=9092)],
    )
    assert _c(encode_response(response, 10, 1)[4:], 10) is None
    plain = ProduceResponse(
        responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=[_written()])]
    )
    for version in (8, 13):
        assert _c(encode_response(plain, version, 1)[4:], version) is None


def test_without_the_extension_every_answer_is_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _answer(11, [("t", [_written()])])
    monkeypatch.setattr(native, "decode_produce_written", None)
    wire = ProduceWire(None, -1, 1000, [])
    wire.frame(11, 99, None)
    assert wire.decode(frame) == decode_response(frame, ProduceResponse, 11)[1]


@pytest.mark.parametrize("seed", range(4))
def test_damaged_answers_read_as_the_generated_decoder_or_not_at_all(seed: int) -> None:
    """Truncated and bit-flipped answers: the C call gives None or exactly the generated
    decoder's reading, never an error or a reading the generated decoder refuses."""
    rng = random.Random(seed)
    version = rng.randint(FIRST_VERSION, LAST_VERSION)
    rows = [
        (f"t{t}", [_written(index=p, base_offset=rng.getrandbits(40)) for p in range(3)]) for t in range(2)
    ]
    frame = _answer(version, rows, throttle=rng.randint(0, 100))
    assert _c(frame, version) == _generated(frame, version) is not None
    damaged = [frame[:cut] for cut in range(len(frame))]
    for _ in range(600):
        flipped = bytearray(frame)
        flipped[rng.randrange(len(frame))] ^= 1 << rng.randrange(8)
        damaged.append(bytes(flipped))
    for bad in damaged:
        got = _c(bad, version)
        try:
            expected = _generated(bad, version)
        except DecodeError:
            expected = None
        if got is not None:
            assert got == expected
