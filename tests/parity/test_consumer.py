"""Consumer scenarios without a group: assign, seek, positions, offsets, pause, stop."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

from tests.parity.flavour import Flavour
from tests.parity.harness import BASE_TS, Context, scenario

pytestmark = pytest.mark.integration

#: partition 0 holds k0..k4 (timestamps BASE_TS + 0..4 s), partition 1 holds k5..k7 (+5..7 s)
RECORDS = [(0, b"k%d" % i, b"v%d" % i) for i in range(5)] + [(1, b"k%d" % i, b"v%d" % i) for i in range(5, 8)]


async def filled_topic(ctx: Context) -> tuple[str, Any, Any]:
    t = await ctx.topic(partitions=2)
    await ctx.fill(t, RECORDS)
    tp = ctx.f.structs.TopicPartition
    return t, tp(t, 0), tp(t, 1)


def values(batch: dict[Any, list[Any]]) -> dict[Any, list[tuple[int, bytes]]]:
    return {tp: [(r.offset, r.value) for r in records] for tp, records in batch.items()}


async def collect(consumer: Any, *tps: Any, count: int, max_records: int | None = None) -> Any:
    """getmany until ``count`` records came (one dict per getmany call, as values)."""
    calls: list[Any] = []
    got = 0
    while got < count:
        batch = await consumer.getmany(*tps, timeout_ms=2000, max_records=max_records)
        if batch:
            calls.append(values(batch))
            got += sum(len(v) for v in batch.values())
    return calls


@scenario
async def test_assign_getone_getmany_position(f: Flavour, ctx: Context) -> None:
    _t, tp0, tp1 = await filled_topic(ctx)
    c = ctx.consumer(enable_auto_commit=False, auto_offset_reset="earliest")
    await ctx.step("start", c.start())
    ctx.sync("assign", c.assign, [tp0, tp1])
    ctx.sync("assignment", c.assignment)
    await ctx.step("position(tp0) after assign", c.position(tp0))
    await ctx.step("getone(tp1)", c.getone(tp1), volatile=())
    await ctx.step("getmany(tp0, max_records=2)", collect(c, tp0, count=2, max_records=2))
    await ctx.step("position(tp0)", c.position(tp0))
    ctx.sync("highwater(tp0)", c.highwater, tp0)
    ctx.sync("last_stable_offset(tp0)", c.last_stable_offset, tp0)
    ctx.sync("last_poll_timestamp(tp0) is an int", lambda: isinstance(c.last_poll_timestamp(tp0), int))
    ctx.sync("seek(tp0, 4)", c.seek, tp0, 4)
    await ctx.step("getmany(tp0) after seek", collect(c, tp0, count=1))
    await ctx.step("seek_to_beginning(tp0)", c.seek_to_beginning(tp0))
    await ctx.step("position after seek_to_beginning", c.position(tp0))
    await ctx.step("getone(tp0) after seek_to_beginning", c.getone(tp0))
    await ctx.step("seek_to_end(tp1)", c.seek_to_end(tp1))
    await ctx.step("position(tp1) after seek_to_end", c.position(tp1))
    await ctx.step("getmany(tp1) at the end", c.getmany(tp1, timeout_ms=300))
    await ctx.step("getone(tp1) at the end", c.getone(tp1), block=0.5)
    await ctx.step("seek_to_beginning() all", c.seek_to_beginning())
    await ctx.step("getmany(max_records=3) calls until 8 records", collect(c, count=8, max_records=3))


@scenario
async def test_offset_lookups(f: Flavour, ctx: Context) -> None:
    t, tp0, tp1 = await filled_topic(ctx)
    c = ctx.consumer(enable_auto_commit=False)
    await c.start()
    await ctx.step("beginning_offsets", c.beginning_offsets([tp0, tp1]))
    await ctx.step("end_offsets", c.end_offsets([tp0, tp1]))
    await ctx.step(
        "offsets_for_times",
        c.offsets_for_times({tp0: BASE_TS + 2000, tp1: BASE_TS + 99_000}),
    )
    await ctx.step("offsets_for_times(0)", c.offsets_for_times({tp0: 0}))
    await ctx.step("offsets_for_times negative", lambda: c.offsets_for_times({tp0: -1}))
    await ctx.step("end_offsets([])", c.end_offsets([]))
    ctx.sync("partitions_for_topic", c.partitions_for_topic, t)
    ctx.sync("partitions_for_topic(unknown)", c.partitions_for_topic, ctx.name("none", "t"))
    topics = await ctx.step("topics()", c.topics(), record=False)
    ctx.out("topics() type, has the topic", (type(topics).__name__, t in (topics or ())))
    ctx.sync("assignment() before assign", c.assignment)
    ctx.sync("subscription() without subscribe", c.subscription)


@scenario
async def test_pause_resume(f: Flavour, ctx: Context) -> None:
    _t, tp0, tp1 = await filled_topic(ctx)
    c = ctx.consumer(enable_auto_commit=False, auto_offset_reset="earliest")
    await c.start()
    c.assign([tp0, tp1])
    ctx.sync("pause(tp0)", c.pause, tp0)
    ctx.sync("paused()", c.paused)
    await ctx.step("getmany while tp0 is paused", collect(c, count=3))
    await ctx.step("getmany(tp0) while paused", c.getmany(tp0, timeout_ms=300))
    ctx.sync("resume(tp0)", c.resume, tp0)
    ctx.sync("paused() after resume", c.paused)
    await ctx.step("getmany after resume", collect(c, count=5))
    ctx.sync("pause(non-TopicPartition)", c.pause, "x")
    ctx.sync("resume(non-TopicPartition)", c.resume, ("x", 0))


@scenario
async def test_argument_checks(f: Flavour, ctx: Context) -> None:
    t, tp0, _tp1 = await filled_topic(ctx)
    unassigned = f.structs.TopicPartition(t, 7)
    c = ctx.consumer(enable_auto_commit=False, auto_offset_reset="earliest")
    await c.start()
    c.assign([tp0])
    ctx.sync('seek(tp, "")', c.seek, tp0, "")
    ctx.sync("seek(tp, -1)", c.seek, tp0, -1)
    ctx.sync("seek(tp, 1.5)", c.seek, tp0, 1.5)
    ctx.sync("seek(unassigned, 0)", c.seek, unassigned, 0)
    ctx.sync("seek(tuple, 0)", c.seek, (t, 0), 0)
    await ctx.step("getmany(max_records=0)", lambda: c.getmany(max_records=0))
    await ctx.step("getmany(max_records=-1)", lambda: c.getmany(max_records=-1))
    await ctx.step("getmany(timeout_ms=-1)", lambda: c.getmany(timeout_ms=-1), block=1)
    await ctx.step("getmany(non-TopicPartition)", lambda: c.getmany("x"))
    await ctx.step("getone(non-TopicPartition)", lambda: c.getone("x"))
    await ctx.step("position(unassigned)", lambda: c.position(unassigned))
    ctx.sync("highwater(unassigned)", c.highwater, unassigned)
    ctx.sync("last_stable_offset(unassigned)", c.last_stable_offset, unassigned)
    await ctx.step("seek_to_beginning(unassigned)", lambda: c.seek_to_beginning(unassigned))
    await ctx.step("seek_to_end(non-TopicPartition)", lambda: c.seek_to_end("x"))
    await ctx.step("seek_to_committed without group", lambda: c.seek_to_committed(tp0))
    await ctx.step("commit without group", c.commit)
    await ctx.step("committed without group", lambda: c.committed(tp0))
    ctx.sync("subscribe after assign", c.subscribe, [t])
    ctx.sync("subscribe(topics and pattern)", c.subscribe, [t], pattern="x")
    ctx.sync("subscribe() with neither", c.subscribe)
    ctx.sync("subscribe(str)", c.subscribe, t)
    ctx.sync("subscribe(pattern='(')", c.subscribe, pattern="(")
    ctx.sync("assign([]) clears", c.assign, [])
    ctx.sync("assignment() after assign([])", c.assignment)
    await ctx.step("getone with nothing assigned", c.getone, block=0.5)


@scenario
async def test_getmany_pending_at_stop_and_after(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    tp = f.structs.TopicPartition(t, 0)
    c = ctx.consumer(enable_auto_commit=False, auto_offset_reset="earliest")
    await c.start()
    c.assign([tp])
    await ctx.step("getmany on an empty topic", c.getmany(timeout_ms=200))
    pending_many = asyncio.ensure_future(c.getmany(timeout_ms=20_000))
    pending_one = asyncio.ensure_future(c.getone())
    for _ in range(20):  # let both reach their wait for records
        await asyncio.sleep(0)
    ctx.out("both pending", (pending_many.done(), pending_one.done()))
    await ctx.step("stop", c.stop())
    await ctx.step("the pending getmany", pending_many, within=5)
    await ctx.step("the pending getone", pending_one, within=5)
    await ctx.step("getmany after stop", lambda: c.getmany(timeout_ms=100))
    await ctx.step("getone after stop", c.getone, within=5)

    async def iterate() -> list[Any]:
        return [r async for r in c]

    await ctx.step("async for over a stopped consumer", iterate(), within=5)
    await ctx.step("stop again", c.stop())


@scenario
async def test_async_for_and_deserializers(f: Flavour, ctx: Context) -> None:
    _t, tp0, tp1 = await filled_topic(ctx)
    c = ctx.consumer(
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        key_deserializer=lambda b: b.decode().upper(),
        value_deserializer=lambda b: {"v": b.decode()},
    )
    await c.start()
    c.assign([tp0])
    got = []

    async def first_three() -> list[Any]:
        async for r in c:
            got.append(r)
            if len(got) == 3:
                break
        return got

    records = await ctx.step("async for, break after 3", first_three(), record=False)
    for r in records or ():
        ctx.out(f"record {r.offset}", r, volatile=("checksum",))
    await ctx.step("getone continues after the break", c.getone(), volatile=("checksum",))

    limited = ctx.consumer(enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=2)
    await limited.start()
    limited.assign([tp0])

    async def first_batch() -> Any:
        while not (batch := await limited.getmany(timeout_ms=1000)):
            pass
        return values(batch)

    await ctx.step("getmany with max_poll_records=2", first_batch())
    await ctx.step("getmany(timeout_ms=0) returns at once", limited.getmany(timeout_ms=0), within=1)

    bad = ctx.consumer(
        enable_auto_commit=False, auto_offset_reset="earliest", value_deserializer=lambda b: 1 / 0
    )
    await bad.start()
    bad.assign([tp1])
    await ctx.step("a deserializer that raises", bad.getone(tp1))


@scenario
async def test_consumer_start_and_constructor(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    C = f.pkg.AIOKafkaConsumer
    c = ctx.consumer(t, enable_auto_commit=False)
    await ctx.step("start with topics, no group", c.start())
    ctx.sync("assignment: every partition", c.assignment)
    ctx.sync("subscription", c.subscription)
    await ctx.step("start twice", c.start)
    async with C(t, bootstrap_servers=ctx.bootstrap, enable_auto_commit=False) as entered:
        ctx.out("async with: the consumer itself", type(entered).__name__)
        ctx.sync("async with: assignment", entered.assignment)
    await ctx.step("getone after async with", entered.getone, within=5)
    for label, kwargs in (
        ("auto_offset_reset='middle'", {"auto_offset_reset": "middle"}),
        ("isolation_level='x'", {"isolation_level": "x"}),
        ("max_poll_records=0", {"max_poll_records": 0}),
        ("unknown keyword", {"no_such_option": 1}),
    ):
        try:
            made = C(bootstrap_servers=ctx.bootstrap, **kwargs)
        except Exception as exc:
            ctx.out(label, [k.__name__ for k in (ValueError, TypeError) if isinstance(exc, k)])
        else:
            ctx.out(label, "constructed")
            ctx.closing(made)


@scenario
async def test_unclosed_clients_and_loop_keyword(f: Flavour, ctx: Context) -> None:
    loop = asyncio.get_running_loop()

    def categories(caught: list[warnings.WarningMessage]) -> list[str]:
        return sorted({w.category.__name__ for w in caught})

    for kind in ("AIOKafkaProducer", "AIOKafkaConsumer"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client = getattr(f.pkg, kind)(bootstrap_servers=ctx.bootstrap)
            del client
            gc.collect()
        ctx.out(f"{kind} never started, dropped", categories(caught))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                client = getattr(f.pkg, kind)(bootstrap_servers=ctx.bootstrap, loop=loop)
            except Exception as exc:
                ctx.out(f"{kind}(loop=...)", exc)
            else:
                ctx.closing(client)
        ctx.out(f"{kind}(loop=...) warns", categories(caught))
