"""Fetch answers no honest broker gives: records that go backwards, records below the
position again and again, a partial batch that never grows. Each ends in a clear error or a
backed-off, logged retry; the other partitions keep flowing."""

from __future__ import annotations

import logging

import anyio
import pytest

from aiokafka_lead.errors import CorruptRecordError, KafkaProtocolError
from aiokafka_lead.protocol.messages import FetchResponse
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster, Respond
from tests.support.loop_lag import watch_loop
from tests.unit.consumer.util import DEADLINE, FETCH, consume, consumer, produce
from tests.unit.records.test_offset_order import batch_with_deltas

BAD, GOOD = TopicPartition("t", 0), TopicPartition("t", 1)


async def test_offsets_going_backwards_in_a_batch_are_an_error_naming_the_partition() -> None:
    async with watch_loop() as watch, FakeCluster(brokers=1) as fc:
        fc.create_topic("t", partitions=2)
        fc.partition(BAD).append(batch_with_deltas([2, 1, 0], base_offset=0))
        produce(fc, GOOD, [b"a", b"b"])
        with anyio.fail_after(DEADLINE):
            async with consumer(fc) as c:
                c.assign([GOOD])
                assert [r.value for r in await consume(c, 2)] == [b"a", b"b"]
                c.assign([BAD])
                with pytest.raises(CorruptRecordError, match="offsets in a batch must increase") as info:
                    await consume(c, 3)
                assert (info.value.topic, info.value.partition) == ("t", 0)
                assert await c.position(BAD) == 0  # nothing handed out
    watch.assert_responsive()


def answer(fc: FakeCluster, tp: TopicPartition, records: bytes, high_watermark: int) -> Respond:
    """A Fetch answer for ``tp`` alone holding ``records`` (named by topic and by id)."""
    part = FetchResponse.PartitionData(
        partition_index=tp.partition,
        high_watermark=high_watermark,
        last_stable_offset=high_watermark,
        log_start_offset=0,
        records=records,
    )
    topic = FetchResponse.FetchableTopicResponse(
        topic=tp.topic, topic_id=fc.topics[tp.topic].topic_id, partitions=[part]
    )
    return Respond(FetchResponse(responses=[topic]))


async def test_records_below_the_position_again_and_again_back_off_and_warn_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with watch_loop() as watch, FakeCluster(brokers=2) as fc:
        fc.create_topic("t", partitions=2, leaders=[1, 2])
        produce(fc, BAD, [b"a", b"b", b"c"])
        old = fc.partition(BAD).batches[0].data
        with anyio.fail_after(DEADLINE):
            async with consumer(fc) as c:
                c.assign([BAD, GOOD])
                assert len(await consume(c, 3)) == 3  # position 3
                lie = answer(fc, BAD, old, high_watermark=3)  # offsets 0-2 again, at once
                fc.intercept(FETCH, lambda node, *_: lie if node == 1 else None, times=None)
                since = fc.now()
                with caplog.at_level(logging.WARNING, logger="aiokafka_lead.consumer.fetch_response"):
                    produce(fc, GOOD, [b"x"])
                    assert [r.value for r in await consume(c, 1)] == [b"x"]  # the healthy one flows
                    with anyio.move_on_after(1.5):
                        while True:  # the user keeps polling
                            assert await c.getmany(timeout_ms=100) == {}
                lied = fc.count(api_key=FETCH, node_id=1, since=since)
                assert lied <= 10, f"{lied} fetches in 1.5 s: no backoff"
                assert await c.position(BAD) == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "Fetch v" in warnings[0] and "node 1" in warnings[0] and "t-0 at offset 3" in warnings[0]
    assert "end at offset 2, below the fetch offset" in warnings[0]
    watch.assert_responsive()


async def test_a_partial_batch_owed_whole_is_an_error_not_an_endless_empty_poll() -> None:
    async with watch_loop() as watch, FakeCluster(brokers=2) as fc:
        fc.create_topic("t", partitions=2, leaders=[1, 2])
        produce(fc, BAD, [b"a" * 100, b"b" * 100])
        whole = fc.partition(BAD).batches[0].data
        partial = answer(fc, BAD, whole[:-50], high_watermark=2)
        fc.intercept(FETCH, lambda node, *_: partial if node == 1 else None, times=None)
        produce(fc, GOOD, [b"x"])
        with anyio.fail_after(DEADLINE):
            async with consumer(fc) as c:
                c.assign([BAD, GOOD])
                with pytest.raises(KafkaProtocolError) as info:
                    while True:  # getmany would return {} for ever
                        await c.getmany(BAD, timeout_ms=200)
                message = str(info.value)
                assert "Fetch v" in message and "node 1" in message and "t-0 at offset 0" in message
                assert "failed to make progress" in message and "owed one whole batch (KIP-74)" in message
                assert [r.value for r in await consume(c, 1)] == [b"x"]  # the healthy one flows
    watch.assert_responsive()


async def test_empty_answers_that_do_not_wait_are_paced() -> None:
    """A broker that answers every Fetch at once with nothing (ignoring max_wait_ms, or
    because it knows no epoch like ours) must not get a fetch storm."""
    async with watch_loop() as watch, FakeCluster(brokers=1) as fc:
        fc.create_topic("t", partitions=1)
        produce(fc, BAD, [b"a"])
        with anyio.fail_after(DEADLINE):
            async with consumer(fc, fetch_max_wait_ms=500) as c:
                c.assign([BAD])
                assert len(await consume(c, 1)) == 1
                empty = answer(fc, BAD, b"", high_watermark=1)
                fc.intercept(FETCH, lambda *_: empty, times=None)
                since = fc.now()
                with anyio.move_on_after(1.5):
                    while True:
                        assert await c.getmany(timeout_ms=100) == {}
                fetches = fc.count(api_key=FETCH, since=since)
                assert fetches <= 15, f"{fetches} fetches in 1.5 s"
                fc.clear_intercepts()
                produce(fc, BAD, [b"b"])
                assert len(await consume(c, 1)) == 1  # and it reads on once the broker behaves
    watch.assert_responsive()
