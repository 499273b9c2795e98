"""Assign-mode consuming against the fake cluster: positions, resets, buffer bounds."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead.consumer import ConsumerStoppedError, NoOffsetForPartitionError, OffsetAndTimestamp
from aiokafka_lead.consumer.fetcher import Fetcher
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import OffsetOutOfRangeError
from aiokafka_lead.protocol.messages import ListOffsetsResponse
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import Error, FakeCluster, Respond
from tests.support.waiting import eventually
from tests.unit.consumer.util import (
    DEADLINE,
    LIST_OFFSETS,
    METADATA,
    consume,
    consumer,
    produce,
)

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


async def test_assign_consumes_every_partition_in_order() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=2, leaders=[1, 2])
            produce(fc, TP0, [b"a", b"b"])
            produce(fc, TP1, [b"x"])
            produce(fc, TP0, [b"c"])
            async with consumer(fc) as c:
                c.assign([TP0, TP1])
                records = await consume(c, 4)
                by_tp: dict[TopicPartition, list[tuple[int, bytes | None]]] = {}
                for r in records:
                    by_tp.setdefault(TopicPartition(r.topic, r.partition), []).append((r.offset, r.value))
                assert by_tp[TP0] == [(0, b"a"), (1, b"b"), (2, b"c")]
                assert by_tp[TP1] == [(0, b"x")]
                assert await c.position(TP0) == 3
                assert c.highwater(TP0) == 3
                assert all(r.leader_epoch == 0 for r in records)


async def test_offset_not_available_is_retried_without_metadata() -> None:
    """KIP-207: a reset that meets OFFSET_NOT_AVAILABLE retries ListOffsets, no Metadata."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=1, leaders=[2])
            produce(fc, TP0, [b"a", b"b", b"c"])
            async with consumer(fc, auto_offset_reset="latest") as c:
                since = fc.now()
                hook = fc.intercept(
                    LIST_OFFSETS, lambda node, header, request: Error(E.OFFSET_NOT_AVAILABLE), times=3
                )
                c.assign([TP0])
                assert await c.position(TP0) == 3
                assert hook.fired == 3
                lookups = fc.requests.select(LIST_OFFSETS, since=since)
                assert len(lookups) == 4
                between = [
                    r for r in fc.requests.select(METADATA) if lookups[0].time <= r.time <= lookups[-1].time
                ]
                assert between == [], c._core.store.refresh_requests


async def test_prefetch_memory_stays_bounded_when_the_user_is_behind() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            value = b"v" * 1000
            for _ in range(100):
                produce(fc, TP0, [value] * 4)
                produce(fc, TP1, [value] * 4)
            batch_size = len(fc.partition(TP0).batches[0].data)
            limit = 10_000
            async with consumer(fc, fetch_max_bytes=limit, max_partition_fetch_bytes=limit) as c:
                c.assign([TP0, TP1])
                got = 0
                while got < 800:
                    batch = await c.getmany(timeout_ms=1000, max_records=7)
                    got += sum(len(v) for v in batch.values())
                    assert c.fetcher.buffer.bytes <= limit + batch_size
                assert got == 800
                # one leader node: never more than the limit plus one batch the broker must send whole
                assert 0 < c.fetcher.buffer.max_bytes <= limit + batch_size


async def test_end_offsets_never_go_backwards() -> None:
    """KIP-207: a new leader answering a lower end offset does not move end_offsets back."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=1, leaders=[1])
            produce(fc, TP0, [b"a"] * 5)
            async with consumer(fc) as c:
                assert await c.end_offsets([TP0]) == {TP0: 5}
                lower = ListOffsetsResponse(
                    topics=[
                        ListOffsetsResponse.ListOffsetsTopicResponse(
                            name="t",
                            partitions=[
                                ListOffsetsResponse.ListOffsetsPartitionResponse(
                                    partition_index=0, offset=3, timestamp=-1, leader_epoch=1
                                )
                            ],
                        )
                    ]
                )
                fc.intercept(LIST_OFFSETS, lambda node, header, request: Respond(lower))
                assert await c.end_offsets([TP0]) == {TP0: 5}
                produce(fc, TP0, [b"b"] * 2)
                assert await c.end_offsets([TP0]) == {TP0: 7}
                assert await c.beginning_offsets([TP0]) == {TP0: 0}


async def test_seek_pause_resume_and_iteration() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            produce(fc, TP0, [b"0", b"1", b"2"])
            produce(fc, TP1, [b"x"])
            async with consumer(fc, auto_offset_reset="latest", key_deserializer=bytes.decode) as c:
                c.assign([TP0, TP1])
                assert await c.position(TP0) == 3
                await c.seek_to_beginning(TP0)
                c.pause(TP1)
                assert c.paused() == {TP1}
                await c.seek_to_beginning(TP1)
                values = [r.value for r in await consume(c, 3)]
                assert values == [b"0", b"1", b"2"]
                assert await c.getmany(TP1, timeout_ms=50) == {}
                c.resume(TP1)
                record = await c.getone()
                assert (record.partition, record.value, record.key) == (1, b"x", None)
                c.seek(TP0, 1)
                seen = []
                async for msg in c:
                    seen.append(msg.offset)
                    if msg.offset == 2:
                        break
                assert seen == [1, 2]
                assert await c.offsets_for_times({TP0: 1_700_000_000_000}) == {
                    TP0: OffsetAndTimestamp(0, 1_700_000_000_000, 0)
                }
                assert await c.offsets_for_times({TP0: 1_800_000_000_000}) == {TP0: None}
                assert "t" in await c.topics()
                assert c.partitions_for_topic("t") == {0, 1}


async def test_reset_none_without_committed_offset_raises() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            async with consumer(fc, auto_offset_reset="none") as c:
                c.assign([TP0])
                with pytest.raises(NoOffsetForPartitionError):
                    await c.getmany(timeout_ms=2000)


async def test_out_of_range_position_resets_per_policy() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            produce(fc, TP0, [b"a", b"b"])
            async with consumer(fc, auto_offset_reset="earliest") as c:
                c.assign([TP0])
                c.seek(TP0, 50)
                assert [r.offset for r in await consume(c, 2)] == [0, 1]
            async with consumer(fc, auto_offset_reset="none") as c:
                c.assign([TP0])
                c.seek(TP0, 50)
                with pytest.raises(OffsetOutOfRangeError) as info:
                    await c.getmany(timeout_ms=2000)
                assert info.value.offsets == {TP0: 50}


@pytest.mark.parametrize("fetch_version", [18, 17, 12, 11, 10])
async def test_older_fetch_versions(fetch_version: int) -> None:
    """v13+ names topics by id, v12+ reports diverging epochs, v9+ carries epochs; v10 is
    the oldest a supported broker (Kafka 2.1) speaks."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=2, max_versions={1: fetch_version}) as fc:
            fc.create_topic("t", partitions=1, leaders=[1])
            produce(fc, TP0, [b"a", b"b"])
            async with consumer(fc) as c:
                c.assign([TP0])
                assert [r.value for r in await consume(c, 2)] == [b"a", b"b"]
                fc.move_leader(TP0, 2)
                produce(fc, TP0, [b"c"])
                assert [r.value for r in await consume(c, 1)] == [b"c"]
                versions = {r.api_version for r in fc.requests.select(1)}
                assert versions == {fetch_version}


async def test_stop_ends_async_for_in_another_task() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            produce(fc, TP0, [b"a"])
            c = consumer(fc)
            await c.start()
            c.assign([TP0])
            seen: list[bytes | None] = []

            async def loop() -> None:
                async for record in c:
                    seen.append(record.value)

            async with anyio.create_task_group() as tg:
                tg.start_soon(loop)
                await eventually(lambda: seen == [b"a"])
                await c.stop()  # the loop is waiting for the next record: it ends cleanly
            with pytest.raises(ConsumerStoppedError):
                await c.getmany()


async def test_a_caught_up_partition_does_not_long_poll_ahead_of_its_buffered_neighbour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broker holds a fetch of caught-up partitions for fetch_max_wait_ms, and its
    connection with it: the fetcher waits for the node's buffered partitions to be taken and
    fetches them all together, instead of parking their next fetch behind that long poll."""
    fetched: list[tuple[set[TopicPartition], int]] = []  # (partitions, TP1 records read by then)
    read = [0]
    start = Fetcher._start_fetch

    def spy(
        self: Fetcher, tg: Any, node: int, tps: list[TopicPartition], free: int, max_wait_ms: int
    ) -> None:
        fetched.append((set(tps), read[0]))
        start(self, tg, node, tps, free, max_wait_ms)

    monkeypatch.setattr(Fetcher, "_start_fetch", spy)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2, leaders=[1, 1])
            produce(fc, TP0, [b"a"])
            for _ in range(12):  # one batch per fetch (max_partition_fetch_bytes)
                produce(fc, TP1, [b"x" * 6000])
            async with consumer(fc, fetch_max_wait_ms=8000, max_partition_fetch_bytes=7000) as c:
                c.assign([TP0, TP1])
                while read[0] < 12:
                    for tp, records in (await c.getmany(timeout_ms=1000, max_records=1)).items():
                        read[0] += len(records) if tp == TP1 else 0
    alone = [tps for tps, done in fetched if tps == {TP0} and done < 12]
    assert not alone, f"{len(alone)} fetch(es) of {TP0} alone while {TP1} had records to read"
