"""Edges of aiokafka's API that its own test suite uses: send_batch without a partition, a
producer driven with ``loop.run_until_complete`` from outside its loop, a client dropped
without ``stop()``, seek_to_committed of an unassigned partition without a group."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from tests.parity.flavour import Flavour
from tests.parity.harness import STEP_TIMEOUT, Context, scenario
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

PLAIN = {"acks": 1, "enable_idempotence": False, "linger_ms": 0}


@scenario
async def test_send_batch_without_a_partition(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic("t", partitions=3)
    p = ctx.producer(**PLAIN)
    await ctx.step("start", p.start())
    partitions = []
    for i in range(3):
        batch = p.create_batch()
        batch.append(key=None, value=b"v%d" % i, timestamp=None)
        sending = p.send_batch(batch, t, partition=None)
        handle = await ctx.step(f"send_batch #{i} (partition=None)", sending, record=False)
        metadata = await ctx.step(f"batch #{i} delivered", handle, record=False)
        if metadata is not None:
            ctx.out(f"batch #{i}: topic", metadata.topic)
            partitions.append(metadata.partition)
    ctx.out("every partition chosen is the topic's", all(p in (0, 1, 2) for p in partitions))
    await ctx.step("stop", p.stop())


@scenario
async def test_producer_driven_from_outside_its_loop(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    bootstrap = ctx.bootstrap

    def outside() -> list[tuple[str, Any]]:
        """aiokafka's own usage: a loop of its own, run_until_complete for each call."""
        seen: list[tuple[str, Any]] = []
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)  # aiokafka's constructor takes the thread's current loop
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # aiokafka's test passes loop=
                producer = f.pkg.AIOKafkaProducer(bootstrap_servers=bootstrap, loop=loop, **PLAIN)
            loop.run_until_complete(asyncio.wait_for(producer.start(), STEP_TIMEOUT))
            try:
                handle = loop.run_until_complete(producer.send(t, b"hello", partition=0))
                seen.append(("handle.get_loop() is the loop", handle.get_loop() is loop))
                metadata = loop.run_until_complete(asyncio.wait_for(handle, STEP_TIMEOUT))
                seen.append(("(partition, offset)", (metadata.partition, metadata.offset)))
            finally:
                loop.run_until_complete(asyncio.wait_for(producer.stop(), STEP_TIMEOUT))
        finally:
            asyncio.set_event_loop(None)
            loop.close()
        return seen

    seen = await ctx.step("run_until_complete outside the loop", asyncio.to_thread(outside), record=False)
    for label, value in seen or []:
        ctx.out(label, value)


@contextlib.contextmanager
def loop_errors_silenced() -> Iterator[None]:
    """aiokafka also reports an unclosed client to the loop's exception handler."""
    loop = asyncio.get_running_loop()
    handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, _context: None)
    try:
        yield
    finally:
        loop.set_exception_handler(handler)


async def dropped(holder: list[Any], ctx: Context, name: str) -> None:
    """Drop the started client in ``holder`` (its only reference) and record what follows."""
    ref = weakref.ref(holder[0])
    with loop_errors_silenced(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        holder.clear()
        gc.collect()
        await asyncio.sleep(0)  # the loop runs what the drop scheduled
    messages = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    caught.clear()  # a warning holds its source (the client)
    ctx.out(f"warned 'Unclosed {name}'", any(f"Unclosed {name}" in m for m in messages))
    ctx.out("collected", ref() is None)


@scenario
async def test_clients_dropped_without_stop(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    producer = f.pkg.AIOKafkaProducer(bootstrap_servers=ctx.bootstrap, **PLAIN)
    await ctx.step("producer start", producer.start())
    await ctx.step("send_and_wait", producer.send_and_wait(t, b"v", partition=0), record=False)
    holder: list[Any] = [producer]
    del producer
    await dropped(holder, ctx, "AIOKafkaProducer")
    consumer = f.pkg.AIOKafkaConsumer(t, bootstrap_servers=ctx.bootstrap, auto_offset_reset="earliest")
    await ctx.step("consumer start", consumer.start())
    record = await ctx.step("getone", consumer.getone(), record=False)
    ctx.out("value", None if record is None else record.value)
    holder.append(consumer)
    del consumer
    await dropped(holder, ctx, "AIOKafkaConsumer")


@scenario
async def test_seek_to_committed_of_an_unassigned_partition_without_a_group(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic("t", partitions=2)
    tp = f.structs.TopicPartition
    c = ctx.consumer(enable_auto_commit=False)
    await ctx.step("start", c.start())
    ctx.sync("assign([p0])", c.assign, [tp(t, 0)])
    await ctx.step("seek_to_committed(p1)", lambda: c.seek_to_committed(tp(t, 1)))
    # (aiokafka's consumer stopped before its background task first ran raises CancelledError)
    await ctx.step("position(p0)", c.position(tp(t, 0)))


@scenario
async def test_records_of_two_partitions_handed_out_by_getone(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic("t", partitions=2)
    await ctx.fill(t, [(p, None, b"%d-%d" % (p, i)) for p in (0, 1) for i in range(3)])
    tp0, tp1 = f.structs.TopicPartition(t, 0), f.structs.TopicPartition(t, 1)
    c = ctx.consumer(enable_auto_commit=False, auto_offset_reset="earliest")
    await ctx.step("start", c.start())
    ctx.sync("assign", c.assign, [tp0, tp1])

    # a partition's high watermark is known once a fetch brought its records
    fetched = eventually(lambda: c.highwater(tp0) is not None and c.highwater(tp1) is not None)
    await ctx.step("both partitions fetched", fetched)
    got = []
    for _ in range(6):
        record = await ctx.step("getone", c.getone(), record=False)
        if record is not None:
            got.append((record.partition, record.value))
    for p in (0, 1):
        ctx.out(f"partition {p}'s records, in order", [v for q, v in got if q == p])
    partitions = [p for p, _ in got]
    changes = sum(a != b for a, b in itertools.pairwise(partitions))
    ctx.out("partition changes between consecutive records", changes)
