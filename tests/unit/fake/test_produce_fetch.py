"""Records round-trip through the fake: produce, fetch, long-poll, idempotence, offsets."""

from __future__ import annotations

import uuid

import anyio
import pytest

from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.protocol.messages import ProduceRequest
from aiokafka_lead.records import MemoryRecords, RecordBatch
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.fake.util import (
    DEADLINE,
    batch,
    connect,
    fetch_partition,
    fetch_request,
    fetched_records,
    produce_partition,
    produce_request,
)

TP = ("t", 0)


async def test_round_trip_keeps_the_producers_bytes() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=1, leaders=[2])
            first = batch([b"a", b"b"], keys=[b"k1", None], headers=[("h", b"v")])
            second = batch([b"c"])
            async with connect(fc, 2) as conn:
                r1 = produce_partition(await conn.send(produce_request("t", 0, first)))
                r2 = produce_partition(await conn.send(produce_request("t", 0, second)))
                assert (r1.error_code, r1.base_offset) == (0, 0)
                assert (r2.error_code, r2.base_offset) == (0, 2)
                response = await conn.send(fetch_request(fc, "t", 0, 0))
            part = fetch_partition(response)
            assert part.error_code == E.NONE
            assert (part.high_watermark, part.last_stable_offset, part.log_start_offset) == (3, 3, 0)
            fetched = bytes(part.records)
            # Same bytes, except the two fields a broker stamps (outside the CRC).
            assert fetched[12 : len(first)] != b""
            assert fetched[:8] == (0).to_bytes(8, "big")
            assert fetched[8:12] == first[8:12] and fetched[16 : len(first)] == first[16:]
            assert fetched[len(first) + 16 :] == second[16:]
            batches = list(MemoryRecords(fetched))
            assert all(isinstance(b, RecordBatch) and b.is_valid() for b in batches)
            assert [b.partition_leader_epoch for b in batches] == [0, 0]  # type: ignore[union-attr]
            assert fetched_records(fetched) == [(0, b"k1", b"a"), (1, None, b"b"), (2, None, b"c")]
            assert fc.records(TP) == [
                (0, b"k1", b"a", [("h", b"v")]),
                (1, None, b"b", [("h", b"v")]),
                (2, None, b"c", []),
            ]
            assert fc.high_watermark(TP) == 3


async def test_fetch_from_the_middle_and_out_of_range() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as conn:
                for value in (b"a", b"b", b"c"):
                    await conn.send(produce_request("t", 0, batch([value])))
                middle = fetch_partition(await conn.send(fetch_request(fc, "t", 0, 1)))
                assert [r[0] for r in fetched_records(middle.records)] == [1, 2]
                at_end = fetch_partition(await conn.send(fetch_request(fc, "t", 0, 3)))
                assert (at_end.error_code, bytes(at_end.records)) == (0, b"")
                beyond = fetch_partition(await conn.send(fetch_request(fc, "t", 0, 4)))
                assert beyond.error_code == E.OFFSET_OUT_OF_RANGE


async def test_acks_zero_gets_no_response_but_appends() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as conn:
                sent = await conn.send(produce_request("t", 0, batch([b"x"]), acks=0), expect_response=False)
                assert sent is None
                # The connection serves requests in order, so this fetch sees the append.
                part = fetch_partition(await conn.send(fetch_request(fc, "t", 0, 0)))
                assert fetched_records(part.records) == [(0, None, b"x")]


async def test_bad_acks_and_unknown_partition() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as conn:
                bad = await conn.send(produce_request("t", 0, batch([b"x"]), acks=2))
                assert produce_partition(bad).error_code == E.INVALID_REQUIRED_ACKS
                missing = await conn.send(produce_request("t", 7, batch([b"x"])))
                assert produce_partition(missing).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
                request = ProduceRequest(
                    acks=1,
                    timeout_ms=1000,
                    topic_data=[
                        ProduceRequest.TopicProduceData(
                            name="t",
                            partition_data=[
                                ProduceRequest.PartitionProduceData(index=0, records=b"\x00" * 70)
                            ],
                        )
                    ],
                )
                corrupt = await conn.send(request)
                assert produce_partition(corrupt).error_code == E.CORRUPT_MESSAGE
            assert fc.records(("t", 0)) == []


async def test_idempotent_duplicates_return_the_original_offset() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as conn:
                pid = dict(producer_id=7, producer_epoch=0)
                first = batch([b"a", b"b"], base_sequence=0, **pid)
                second = batch([b"c"], base_sequence=2, **pid)
                r1 = produce_partition(await conn.send(produce_request("t", 0, first)))
                r2 = produce_partition(await conn.send(produce_request("t", 0, second)))
                assert (r1.base_offset, r2.base_offset) == (0, 2)
                # A retry of either of the last five batches: success, original offset.
                again = produce_partition(await conn.send(produce_request("t", 0, first)))
                assert (again.error_code, again.base_offset) == (0, 0)
                again2 = produce_partition(await conn.send(produce_request("t", 0, second)))
                assert (again2.error_code, again2.base_offset) == (0, 2)
                # A gap in the sequence is OUT_OF_ORDER_SEQUENCE_NUMBER.
                gap = batch([b"d"], base_sequence=5, **pid)
                answer = await conn.send(produce_request("t", 0, gap))
                assert produce_partition(answer).error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER
                # The next in-order batch still goes through.
                nxt = batch([b"d"], base_sequence=3, **pid)
                r3 = produce_partition(await conn.send(produce_request("t", 0, nxt)))
                assert (r3.error_code, r3.base_offset) == (0, 3)
            assert [r[2] for r in fc.records(("t", 0))] == [b"a", b"b", b"c", b"d"]


async def test_producer_epochs_fence_and_restart_sequences() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as conn:

                async def send(epoch: int, seq: int) -> int:
                    data = batch([b"v"], producer_id=3, producer_epoch=epoch, base_sequence=seq)
                    response = await conn.send(produce_request("t", 0, data))
                    return int(produce_partition(response).error_code)

                assert await send(1, 10) == 0  # a new producer may start anywhere
                assert await send(2, 4) == 45  # a bumped epoch must restart at 0
                assert await send(2, 0) == 0
                assert await send(1, 11) == 47  # the old epoch is fenced


async def test_long_poll_wakes_on_produce() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as consumer, connect(fc, 1) as producer:
                result: list[object] = []

                async def poll() -> None:
                    request = fetch_request(fc, "t", 0, 0, max_wait_ms=30_000)
                    result.append(await consumer.send(request))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(poll)
                    await fc.wait_for(lambda: fc.count(api_key=1) > 0)  # parked in the broker
                    assert result == []
                    await producer.send(produce_request("t", 0, batch([b"late"])))
                part = fetch_partition(result[0])
                assert fetched_records(part.records) == [(0, None, b"late")]


async def test_long_poll_returns_empty_after_max_wait() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as conn:
                request = fetch_request(fc, "t", 0, 0, max_wait_ms=20)
                part = fetch_partition(await conn.send(request))
                assert (part.error_code, bytes(part.records), part.high_watermark) == (0, b"", 0)


@pytest.mark.parametrize(
    ("current_leader_epoch", "error"),
    [(1, 74), (2, 0), (3, 75), (-1, 0)],
    ids=["older-fenced", "same", "newer-unknown", "unchecked"],
)
async def test_fetch_checks_current_leader_epoch(current_leader_epoch: int, error: int) -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=2) as fc:
            fc.create_topic("t", leaders=[1])
            fc.move_leader(TP, 2)
            assert fc.move_leader(TP, 1) == 2  # node 1 leads again, at epoch 2
            async with connect(fc, 1) as conn:
                request = fetch_request(fc, "t", 0, 0, current_leader_epoch=current_leader_epoch)
                part = fetch_partition(await conn.send(request))
                assert part.error_code == error


async def test_fetch_unknown_topic_id_and_name() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as conn:
                request = fetch_request(fc, "t", 0, 0)
                request.topics[0].topic_id = uuid.uuid4()
                part = fetch_partition(await conn.send(request))
                assert part.error_code == E.UNKNOWN_TOPIC_ID  # (v13+ names topics by id)
                request.topics[0].topic = "nope"
                by_name = fetch_partition(await conn.send(request, version=12))
                assert by_name.error_code == E.UNKNOWN_TOPIC_OR_PARTITION


async def test_every_produce_and_fetch_version_round_trips() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as conn:
                for offset, version in enumerate(range(3, 13)):
                    response = await conn.send(
                        produce_request("t", 0, batch([b"v%d" % version])), version=version
                    )
                    assert produce_partition(response).base_offset == offset
                for version in range(4, 18):
                    response = await conn.send(fetch_request(fc, "t", 0, 0), version=version)
                    part = fetch_partition(response)
                    assert part.error_code == E.NONE, version
                    assert [r[2] for r in fetched_records(part.records)] == [b"v%d" % v for v in range(3, 13)]


async def test_unknown_fetch_session_is_refused() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t")
            async with connect(fc, 1) as conn:
                request = fetch_request(fc, "t", 0, 0)
                request.session_id, request.session_epoch = 12, 1
                response = await conn.send(request)
            assert (response.error_code, response.session_id, response.responses) == (70, 0, [])
