"""AIOKafkaProducer behaviour on the fake cluster: validation, backpressure, muting, acks=0,
send_batch, graceful stop, the idempotent epoch bump."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import KafkaTimeoutError, MessageSizeTooLargeError
from aiokafka_lead.runtime import ClientClosedError
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Delay, Error

PRODUCE = 0


@asynccontextmanager
async def producer_on(
    partitions: int = 2, **kwargs: Any
) -> AsyncIterator[tuple[FakeCluster, AIOKafkaProducer]]:
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic("t", partitions=partitions, replication_factor=1)
        async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, **kwargs) as producer:
            yield fc, producer


def values(fc: FakeCluster, partition: int) -> list[Any]:
    return [r[2] for r in fc.records(("t", partition))]


async def test_invalid_input_fails_fast_with_clear_errors() -> None:
    with anyio.fail_after(10):
        async with producer_on(max_request_size=1000, max_block_ms=300) as (_, producer):
            with pytest.raises(MessageSizeTooLargeError, match="max_request_size=1000"):
                await producer.send("t", b"x" * 2000)
            with pytest.raises(TypeError, match="value must be bytes"):
                await producer.send("t", "not bytes")  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="has no partition 7"):
                await producer.send("t", b"x", partition=7)
            with pytest.raises(TypeError, match="partition must be an int, not str"):
                await producer.send("t", b"x", partition="1")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match=r"headers\[0\] value must be bytes"):
                await producer.send("t", b"x", headers=[("h", "not bytes")])  # type: ignore[list-item]
            with pytest.raises(KafkaTimeoutError, match="not present in metadata"):
                await producer.send("missing-topic", b"x")
            assert (await producer.send_and_wait("t", b"ok", partition=0)).offset == 0


async def test_a_custom_partitioner_naming_a_missing_partition_fails_that_send_only() -> None:
    with anyio.fail_after(10):
        async with producer_on(partitioner=lambda key, all_parts, available: 42) as (_, producer):
            with pytest.raises(ValueError, match="has no partition 42"):
                await producer.send("t", b"x")
            assert (await producer.send_and_wait("t", b"ok", partition=1)).offset == 0


def test_constructor_validates_options() -> None:
    with pytest.raises(ValueError, match="acks"):
        AIOKafkaProducer(acks=2)
    with pytest.raises(ValueError, match="needs acks='all'"):
        AIOKafkaProducer(acks=1, enable_idempotence=True)
    with pytest.raises(ValueError, match="compression_type"):
        AIOKafkaProducer(compression_type="brotli")
    with pytest.raises(TypeError, match="unsupported producer options: bogus"):
        AIOKafkaProducer(bogus=1)
    assert AIOKafkaProducer(acks=1)._config.idempotent is False  # idempotence off, as in Java


async def test_buffer_full_blocks_then_fails_without_losing_queued_records() -> None:
    with anyio.fail_after(20):
        async with producer_on(buffer_memory=4096, max_block_ms=300, linger_ms=0) as (fc, producer):
            fc.intercept(PRODUCE, lambda *_: Delay(1.5), times=1)  # the broker stalls once
            handles = []
            with pytest.raises(KafkaTimeoutError, match="buffer_memory"):
                for _ in range(100):
                    handles.append(await producer.send("t", bytes(500), partition=0))
            started = time.monotonic()
            for handle in handles:
                await handle  # everything accepted before the error is delivered
            assert time.monotonic() - started < 5
            assert len(values(fc, 0)) == len(handles)


async def test_a_retrying_partition_does_not_stall_others_on_the_same_broker() -> None:
    def fail_partition_0(node: int, header: Any, request: Any) -> Error | None:
        parts = {p.index for t in request.topic_data for p in t.partition_data}
        return Error(E.NOT_ENOUGH_REPLICAS) if 0 in parts else None  # retriable

    with anyio.fail_after(20):
        async with producer_on(retry_backoff_ms=200) as (fc, producer):
            blocker = fc.intercept(PRODUCE, fail_partition_0, times=None)
            stuck = await producer.send("t", b"p0", partition=0)
            others = [await producer.send("t", f"p1-{i}".encode(), partition=1) for i in range(50)]
            for handle in others:
                await handle
            assert not stuck.done()
            blocker.remove()
            assert (await stuck).offset == 0
            assert producer.metrics()["errors"]["NotEnoughReplicasError"] >= 1


async def test_acks_zero_resolves_to_none_as_in_aiokafka() -> None:
    with anyio.fail_after(10):
        async with producer_on(acks=0) as (fc, producer):
            md = await producer.send_and_wait("t", b"fire-and-forget", partition=1)
            assert md is None
            await fc.wait_for(lambda: len(fc.records(("t", 1))) == 1)


async def test_send_batch_and_headers_round_trip() -> None:
    with anyio.fail_after(10):
        async with producer_on() as (fc, producer):
            batch = producer.create_batch()
            for value in (b"v0", b"v1", b"v2"):
                assert batch.append(key=b"k", value=value, headers=[("h", b"1")]) is not None
            md = await (await producer.send_batch(batch, "t", partition=1))
            assert md.offset == 0
            assert [(r[1], r[2], r[3]) for r in fc.records(("t", 1))] == [
                (b"k", f"v{i}".encode(), [("h", b"1")]) for i in range(3)
            ]


async def test_stop_flushes_and_no_handle_is_left_pending() -> None:
    with anyio.fail_after(10):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            producer = AIOKafkaProducer(bootstrap_servers=fc.bootstrap, linger_ms=200)
            await producer.start()
            handles = [await producer.send("t", f"{i}".encode()) for i in range(20)]
            await producer.stop()  # flushes the lingering batch
            assert all(h.done() and h.exception() is None for h in handles)
            assert len(fc.records(("t", 0))) == 20
            with pytest.raises(ClientClosedError):
                await producer.send("t", b"late")


async def test_lost_producer_state_bumps_the_epoch_and_delivers() -> None:
    with anyio.fail_after(10):
        async with producer_on() as (fc, producer):
            await producer.send_and_wait("t", b"first", partition=0)
            epoch = producer.metrics()["producer_epoch"]
            fc.intercept(PRODUCE, lambda *_: Error(E.UNKNOWN_PRODUCER_ID), times=1)
            md = await producer.send_and_wait("t", b"second", partition=0)
            m = producer.metrics()
            assert m["epoch_bumps"] == 1 and m["producer_epoch"] == epoch + 1
            assert md.offset == 1 and values(fc, 0) == [b"first", b"second"]


async def test_a_failing_epoch_bump_fails_the_queued_records_and_the_producer_recovers() -> None:
    init_producer_id = 22
    with anyio.fail_after(20):
        async with producer_on(max_block_ms=300, delivery_timeout_ms=60_000) as (fc, producer):
            await producer.send_and_wait("t", b"first", partition=0)
            fc.intercept(PRODUCE, lambda *_: Error(E.UNKNOWN_PRODUCER_ID), times=1)  # bump needed
            away = Error(E.COORDINATOR_NOT_AVAILABLE)
            refusing = fc.intercept(init_producer_id, lambda *_: away, times=None)  # the coordinator is away
            with pytest.raises(KafkaTimeoutError, match="InitProducerId"):
                await producer.send_and_wait("t", b"lost", partition=0)
            refusing.remove()
            md = await producer.send_and_wait("t", b"after", partition=0)  # the producer lives on
            assert md.offset == 1 and producer.metrics()["epoch_bumps"] >= 2
