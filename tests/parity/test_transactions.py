"""Transactional producer scenarios, read back with read_committed / read_uncommitted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.parity.flavour import Flavour
from tests.parity.harness import Context, scenario
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


async def read_all(ctx: Context, topic: str, isolation_level: str, *, partitions: int = 1) -> list[Any]:
    """Everything ``isolation_level`` shows of ``topic``, up to its end offsets.

    Every transaction of the scenario has ended when this is called, but the coordinator
    writes the commit and abort markers after EndTxn has returned: a read_committed end
    offset (the last stable offset) taken at once may still stop before the last
    transaction. So the end is the high watermark once the last stable offset reaches it."""
    f = ctx.f
    consumer = ctx.consumer(isolation_level=isolation_level, enable_auto_commit=False)
    await consumer.start()
    tps = [f.structs.TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    await consumer.seek_to_beginning()
    watermarks = ctx.consumer(isolation_level="read_uncommitted", enable_auto_commit=False)
    await watermarks.start()
    try:
        end = await watermarks.end_offsets(tps)
    finally:
        await watermarks.stop()
    async with asyncio.timeout(15):  # the markers are written within the request timeout

        async def settled() -> bool:
            return bool(await consumer.end_offsets(tps) == end)

        await eventually(settled)
    got: list[Any] = []
    async with asyncio.timeout(15):
        while [tp for tp in tps if await consumer.position(tp) < end[tp]]:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                got.extend((r.partition, r.offset, r.value) for r in records)
    await consumer.stop()
    return sorted(got)


def txn_producer(ctx: Context, key: str = "x", **kwargs: Any) -> Any:
    return ctx.producer(transactional_id=ctx.name(key, "x"), **kwargs)


@scenario
async def test_begin_commit_abort(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    p = txn_producer(ctx)
    await ctx.step("start", p.start())
    await ctx.step("begin_transaction", p.begin_transaction)
    await ctx.step(
        "send_and_wait c0", lambda: p.send_and_wait(t, b"c0", partition=0), volatile=("timestamp",)
    )
    await ctx.step(
        "send_and_wait c1", lambda: p.send_and_wait(t, b"c1", partition=0), volatile=("timestamp",)
    )
    await ctx.step("commit_transaction", p.commit_transaction)
    await ctx.step("begin_transaction 2", p.begin_transaction)
    await ctx.step(
        "send_and_wait a0", lambda: p.send_and_wait(t, b"a0", partition=0), volatile=("timestamp",)
    )
    await ctx.step("abort_transaction", p.abort_transaction)
    await ctx.step("begin_transaction 3", p.begin_transaction)
    fut = await p.send(t, b"c2", partition=0)
    await ctx.step("commit_transaction with a send in flight", p.commit_transaction)
    ctx.out("the in-flight send is done after commit", fut.done())
    await ctx.step("stop", p.stop())
    ctx.out("read_committed", await read_all(ctx, t, "read_committed"))
    ctx.out("read_uncommitted", await read_all(ctx, t, "read_uncommitted"))


@scenario
async def test_transaction_context_manager(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    p = txn_producer(ctx)
    await p.start()

    async def committed_block() -> Any:
        async with p.transaction() as txn:
            await p.send_and_wait(t, b"in-commit", partition=0)
            return txn is not None

    await ctx.step("async with transaction(): returns normally", committed_block())

    async def failing_block() -> None:
        async with p.transaction():
            await p.send_and_wait(t, b"in-abort", partition=0)
            raise KeyError("application error")

    await ctx.step("async with transaction(): body raises", failing_block())
    await ctx.step("a new transaction after the aborted one", committed_block())
    ctx.out("read_committed", await read_all(ctx, t, "read_committed"))


@scenario
async def test_send_offsets_to_transaction(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic(partitions=2)
    group = ctx.name("g")
    tp0, tp1 = (f.structs.TopicPartition(t, p) for p in (0, 1))
    p = txn_producer(ctx)
    await p.start()
    await ctx.step("begin_transaction", p.begin_transaction)
    await p.send_and_wait(t, b"v", partition=0)
    await ctx.step("send_offsets_to_transaction ints", lambda: p.send_offsets_to_transaction({tp0: 5}, group))
    await ctx.step(
        "send_offsets_to_transaction OffsetAndMetadata",
        p.send_offsets_to_transaction({tp1: f.structs.OffsetAndMetadata(7, "meta")}, group),
    )
    await ctx.step("commit_transaction", p.commit_transaction)
    await ctx.step("begin_transaction 2", p.begin_transaction)
    await ctx.step(
        "offsets in a transaction then aborted", lambda: p.send_offsets_to_transaction({tp0: 9}, group)
    )
    await ctx.step("abort_transaction", p.abort_transaction)
    c = ctx.consumer(group_id=group, enable_auto_commit=False)
    await c.start()
    await ctx.step("committed(tp0)", c.committed(tp0))
    await ctx.step("committed(tp1)", c.committed(tp1))


@scenario
async def test_transaction_misuse(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    tp = f.structs.TopicPartition(t, 0)
    plain = ctx.producer(acks=1, enable_idempotence=False)
    await plain.start()
    await ctx.step("begin_transaction without transactional_id", plain.begin_transaction)
    ctx.sync("transaction() without transactional_id", lambda: type(plain.transaction()).__name__ != "")
    p = txn_producer(ctx)
    await p.start()
    await ctx.step("send outside a transaction", lambda: p.send(t, b"v", partition=0))
    await ctx.step(
        "send_offsets_to_transaction outside a transaction",
        lambda: p.send_offsets_to_transaction({tp: 1}, "g"),
    )
    await ctx.step("commit_transaction without begin", p.commit_transaction)
    await ctx.step("abort_transaction without begin", p.abort_transaction)
    await ctx.step("begin_transaction", p.begin_transaction)
    await ctx.step("begin_transaction twice", p.begin_transaction)
    await ctx.step("send_offsets_to_transaction group ''", lambda: p.send_offsets_to_transaction({tp: 1}, ""))
    await ctx.step(
        "send_offsets_to_transaction bad offsets", lambda: p.send_offsets_to_transaction({"x": 1}, "g")
    )
    await ctx.step("the transaction still commits", p.commit_transaction)


@scenario
async def test_read_committed_waits_for_the_commit(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    tp = f.structs.TopicPartition(t, 0)
    p = txn_producer(ctx)
    await p.start()
    c = ctx.consumer(isolation_level="read_committed", enable_auto_commit=False, auto_offset_reset="earliest")
    await c.start()
    c.assign([tp])
    await ctx.step("begin_transaction", p.begin_transaction)
    await p.send_and_wait(t, b"open", partition=0)
    await ctx.step("getmany while the transaction is open", c.getmany(timeout_ms=1000))
    ctx.sync("last_stable_offset while open", c.last_stable_offset, tp)
    ctx.sync("highwater while open", c.highwater, tp)
    await ctx.step("commit_transaction", p.commit_transaction)

    async def first_batch() -> Any:
        while True:
            batch = await c.getmany(timeout_ms=1000)
            if batch:
                return {k: [r.value for r in v] for k, v in batch.items()}

    await ctx.step("getmany after the commit", first_batch())
    ctx.sync("last_stable_offset after", c.last_stable_offset, tp)
