"""send()'s handle behaves like aiokafka's asyncio future: asyncio.wait/gather/wait_for
accept it, acks=0 resolves to None, cancel() detaches without unsending; and
begin_transaction() is awaited as in aiokafka."""

from __future__ import annotations

import asyncio
import inspect

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.structs import RecordMetadata
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Delay

DEADLINE = 20
PRODUCE = 0


async def test_asyncio_wait_accepts_the_handle_and_returns_it_in_done() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                handle = await producer.send("t", b"v")
                assert asyncio.isfuture(handle)
                done, pending = await asyncio.wait([handle])
                assert done == {handle} and not pending
                assert isinstance(handle.result(), RecordMetadata)
                again = await producer.send("t", b"w")
                results = await asyncio.gather(again, asyncio.ensure_future(again))
                assert results[0] == results[1] and results[0].offset == 1


async def test_acks_0_resolves_to_none() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, acks=0) as producer:
                assert await (await producer.send("t", b"v")) is None
                assert await producer.send_and_wait("t", b"v") is None


async def test_a_cancelled_handle_detaches_but_the_record_is_delivered() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            fc.intercept(PRODUCE, lambda *_: Delay(0.5), times=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                handle = await producer.send("t", b"slow")
                seen: list[bool] = []
                handle.add_done_callback(lambda h: seen.append(h.cancelled()))
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(handle, 0.05)
                assert handle.cancelled() and handle.done() and seen == [True]
                with pytest.raises(asyncio.CancelledError):
                    handle.result()
                await producer.flush()
                assert [r[2] for r in fc.records(("t", 0))] == [b"slow"]


async def test_remove_done_callback_unregisters() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            fc.intercept(PRODUCE, lambda *_: Delay(0.2), times=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                handle = await producer.send("t", b"v")
                calls: list[str] = []

                def first(_: object) -> None:
                    calls.append("first")

                def second(_: object) -> None:
                    calls.append("second")

                handle.add_done_callback(first)
                handle.add_done_callback(second)
                assert handle.remove_done_callback(first) == 1
                await handle
                assert calls == ["second"]


def test_begin_transaction_is_a_coroutine_function_like_aiokafkas() -> None:
    assert inspect.iscoroutinefunction(AIOKafkaProducer.begin_transaction)


async def test_unclosed_producer_warns_and_loop_is_deprecated() -> None:
    import gc
    import warnings

    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            with pytest.warns(DeprecationWarning, match="loop"):
                producer = AIOKafkaProducer(bootstrap_servers=fc.bootstrap, loop=object())
            await producer.start()
            await producer._core.close()  # its tasks end; the producer itself was never stopped
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                del producer
                gc.collect()
            assert any(issubclass(w.category, ResourceWarning) for w in caught)


async def test_a_stopped_producer_raises_producer_closed() -> None:
    from aiokafka_lead.errors import ClientClosedError, ProducerClosed

    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            producer = AIOKafkaProducer(bootstrap_servers=fc.bootstrap)
            await producer.start()
            await producer.stop()
            with pytest.raises(ProducerClosed):
                await producer.send("t", b"v")
            assert issubclass(ProducerClosed, ClientClosedError)


async def test_gather_of_a_done_handle_completes() -> None:
    """A done future's callbacks are scheduled on the loop, as asyncio.Future's: gather
    registers before it creates its outer future (called at once, it never completed)."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                handle = await producer.send("t", b"v")
                metadata = await handle
                assert await asyncio.wait_for(asyncio.gather(handle), 5) == [metadata]
