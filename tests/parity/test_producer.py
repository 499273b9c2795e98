"""Producer scenarios: what aiokafka's AIOKafkaProducer returns and raises, and ours.

aiokafka's defaults differ from ours on purpose (acks=1 vs "all", idempotence off vs
on): the scenarios pass explicit settings unless the default is what they test.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.parity.flavour import Flavour
from tests.parity.harness import BASE_TS, Context, scenario

pytestmark = pytest.mark.integration

PLAIN = {"acks": 1, "enable_idempotence": False, "linger_ms": 0}
METADATA_VOLATILE = ("timestamp",)


async def read_back(ctx: Context, topic: str, partitions: int, count: int) -> list[Any]:
    """``count`` records of ``topic`` from the beginning, read with the flavour's consumer
    (no group), sorted by (partition, offset)."""
    f = ctx.f
    consumer = ctx.consumer(bootstrap_servers=ctx.bootstrap, enable_auto_commit=False)
    await consumer.start()
    consumer.assign([f.structs.TopicPartition(topic, p) for p in range(partitions)])
    await consumer.seek_to_beginning()
    got: list[Any] = []
    async with asyncio.timeout(15):
        while len(got) < count:
            batch = await consumer.getmany(timeout_ms=1000)
            for records in batch.values():
                got.extend(records)
    await consumer.stop()
    return sorted(got, key=lambda r: (r.partition, r.offset))


@scenario
async def test_send_and_wait_returns_record_metadata(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic("t", partitions=2)
    p = ctx.producer(**PLAIN)
    await ctx.step("start", p.start())
    await ctx.step(
        "send_and_wait p1 ts", p.send_and_wait(t, b"v0", key=b"k", partition=1, timestamp_ms=BASE_TS)
    )
    await ctx.step("send_and_wait p1 again", p.send_and_wait(t, b"v1", partition=1, timestamp_ms=BASE_TS + 1))
    md = await ctx.step(
        "send_and_wait p0 no ts", p.send_and_wait(t, b"v2", partition=0), volatile=METADATA_VOLATILE
    )
    if md is not None:
        ctx.out("p0 timestamp is an int > BASE_TS", isinstance(md.timestamp, int) and md.timestamp > BASE_TS)
    await ctx.step("stop", p.stop())


@scenario
async def test_send_returns_a_future_like_handle(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    p = ctx.producer(**PLAIN)
    await p.start()
    fut = await ctx.step("send", p.send(t, b"v", partition=0, timestamp_ms=BASE_TS), record=False)
    if fut is None:
        return
    ctx.out("handle is awaitable", hasattr(fut, "__await__"))

    async def wait_counts() -> tuple[int, int]:
        done, pending = await asyncio.wait([fut], timeout=10)
        return len(done), len(pending)

    await ctx.step("asyncio.wait([handle]): done, pending", wait_counts())
    ctx.out("done()", fut.done())
    ctx.out("cancelled()", fut.cancelled())
    ctx.sync("result()", fut.result)
    ctx.sync("exception()", fut.exception)
    await ctx.step("await handle", fut)
    calls: list[Any] = []
    ctx.sync("add_done_callback", fut.add_done_callback, calls.append)
    await asyncio.sleep(0)  # a Future schedules the callback of a done future on the loop
    await asyncio.sleep(0)
    ctx.out("callback called with the handle", [c is fut for c in calls])
    await ctx.step("asyncio.wait_for(handle)", asyncio.wait_for(fut, 5))
    await ctx.step("asyncio.gather(handle)", asyncio.gather(fut))
    fut2 = await p.send(t, b"v2", partition=0, timestamp_ms=BASE_TS)
    await ctx.step("asyncio.ensure_future(handle)", asyncio.ensure_future(fut2))


@scenario
async def test_acks_0_future_result(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    p = ctx.producer(acks=0, enable_idempotence=False)
    await p.start()
    await ctx.step("send_and_wait acks=0", p.send_and_wait(t, b"v", partition=0))
    fut = await p.send(t, b"w", partition=0)
    await ctx.step("await send() acks=0", fut)
    await p.flush()
    records = await read_back(ctx, t, 1, 2)
    ctx.out("delivered", [(r.value, r.offset) for r in records])


@scenario
async def test_headers_round_trip(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    p = ctx.producer(**PLAIN)
    await p.start()
    await ctx.step(
        "send headers",
        p.send_and_wait(
            t, b"v", key=b"k", partition=0, timestamp_ms=BASE_TS, headers=[("a", b"1"), ("b", b"")]
        ),
    )
    await ctx.step("send no headers", p.send_and_wait(t, b"w", partition=0, timestamp_ms=BASE_TS))
    await ctx.step("send headers=[]", p.send_and_wait(t, b"x", partition=0, timestamp_ms=BASE_TS, headers=[]))
    for r in await read_back(ctx, t, 1, 3):
        ctx.out(f"record {r.offset}", r, volatile=("checksum",))


@scenario
async def test_timestamps_create_and_log_append_time(f: Flavour, ctx: Context) -> None:
    create = await ctx.topic("create")
    append = await ctx.topic("append", configs={"message.timestamp.type": "LogAppendTime"})
    p = ctx.producer(**PLAIN)
    await p.start()
    await ctx.step(
        "CreateTime with timestamp_ms", p.send_and_wait(create, b"v", partition=0, timestamp_ms=BASE_TS)
    )
    md = await ctx.step(
        "LogAppendTime with timestamp_ms",
        p.send_and_wait(append, b"v", partition=0, timestamp_ms=BASE_TS),
        volatile=METADATA_VOLATILE,
    )
    if md is not None:
        ctx.out("LogAppendTime metadata timestamp is the broker's", md.timestamp > BASE_TS)
    [r] = await read_back(ctx, append, 1, 1)
    ctx.out("LogAppendTime record", (r.timestamp_type, r.timestamp > BASE_TS))


@scenario
async def test_partition_and_key_routing(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic(partitions=4)
    p = ctx.producer(**PLAIN)
    await p.start()
    routed = {}
    for key in (b"a", b"b", b"c", b"order-1", b"order-2", b"x" * 40):
        md = await p.send_and_wait(t, b"v", key=key)
        routed[key] = md.partition
    ctx.out("key -> partition (murmur2)", routed)
    md = await ctx.step(
        "explicit partition 3", p.send_and_wait(t, b"v", key=b"a", partition=3), volatile=METADATA_VOLATILE
    )
    mds = [await p.send_and_wait(t, b"v") for _ in range(4)]
    ctx.out("no key: partitions in range", all(0 <= m.partition < 4 for m in mds))
    await ctx.step("partition 4 of a 4-partition topic", p.send(t, b"v", partition=4))
    await ctx.step("partition -1", p.send(t, b"v", partition=-1))
    calls: list[Any] = []

    def last_partition(key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
        calls.append((key, sorted(all_partitions), sorted(available)))
        return all_partitions[-1]

    fresh = await ctx.topic("fresh", partitions=4)
    custom = ctx.producer(**PLAIN, partitioner=last_partition)
    await custom.start()
    await ctx.step(
        "custom partitioner", custom.send_and_wait(fresh, b"v", key=b"k"), volatile=METADATA_VOLATILE
    )
    ctx.out("partitioner calls", calls)


@scenario
async def test_partitions_for(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic(partitions=3)
    p = ctx.producer(**PLAIN)
    await p.start()
    await ctx.step("partitions_for", p.partitions_for(t))


@scenario
async def test_flush_delivers_everything(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic(partitions=2)
    # aiokafka's flush() waits for the linger to pass (it does not send at once, as Java's
    # does): a short linger keeps the scenario about what flush() returns
    p = ctx.producer(acks=1, enable_idempotence=False, linger_ms=300)
    await p.start()
    futs = [await p.send(t, b"v%d" % i, partition=i % 2, timestamp_ms=BASE_TS) for i in range(6)]
    ctx.out("done before flush", [x.done() for x in futs])
    await ctx.step("flush", p.flush(), within=5)
    ctx.out("done after flush", [x.done() for x in futs])
    ctx.out("offsets", [(x.result().partition, x.result().offset) for x in futs])
    await ctx.step("flush with nothing pending", p.flush())


@scenario
async def test_create_batch_and_send_batch(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic(partitions=2)
    p = ctx.producer(**PLAIN)
    await p.start()
    batch = p.create_batch()
    for i in range(3):
        ctx.sync(
            f"append {i} is not None",
            lambda i=i: batch.append(key=b"k%d" % i, value=b"v%d" % i, timestamp=BASE_TS + i) is not None,
        )
    ctx.sync("record_count", batch.record_count)
    ctx.out("size is an int > 0", batch.size() > 0)
    fut = await ctx.step("send_batch", p.send_batch(batch, t, partition=1), record=False)
    if fut is not None:
        await ctx.step("await send_batch handle", fut, volatile=METADATA_VOLATILE)
    for r in await read_back(ctx, t, 2, 3):
        ctx.out(f"record {r.partition}/{r.offset}", (r.key, r.value, r.timestamp))
    empty = p.create_batch()
    ctx.sync(
        "append None/None is not None", lambda: empty.append(key=None, value=None, timestamp=None) is not None
    )
    big = p.create_batch()
    ctx.sync(
        "first append over the batch size fits",
        lambda: big.append(key=None, value=b"x" * 100_000, timestamp=None) is not None,
    )
    ctx.sync(
        "a second one does not (None)", lambda: big.append(key=None, value=b"x" * 100_000, timestamp=None)
    )


@scenario
async def test_send_to_unknown_topic(f: Flavour, ctx: Context) -> None:
    """The cluster auto-creates topics (Kafka's default): a send to a new name succeeds."""
    t = ctx.name("new", "t")
    ctx.setup.created_topics.append(t)
    p = ctx.producer(**PLAIN, request_timeout_ms=10_000)
    await p.start()
    await ctx.step("send_and_wait to a new topic", p.send_and_wait(t, b"v"), volatile=METADATA_VOLATILE)


@scenario
async def test_too_large_record(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    p = ctx.producer(**PLAIN, max_request_size=1000)
    await p.start()
    await ctx.step("send 2000 bytes (max_request_size 1000)", p.send(t, b"x" * 2000, partition=0))
    small = await ctx.topic("small", configs={"max.message.bytes": "1000"})
    q = ctx.producer(**PLAIN)
    await q.start()
    await ctx.step(
        "send 5000 bytes to a topic of max.message.bytes 1000",
        q.send_and_wait(small, b"x" * 5000, partition=0),
    )
    await ctx.step(
        "the producer still works", q.send_and_wait(t, b"ok", partition=0), volatile=METADATA_VOLATILE
    )


@scenario
async def test_send_after_stop(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    p = ctx.producer(**PLAIN)
    await p.start()
    await p.send_and_wait(t, b"v", partition=0)
    await ctx.step("stop", p.stop())
    await ctx.step("send after stop", p.send(t, b"v", partition=0), within=5)
    await ctx.step("stop again", p.stop())


@scenario
async def test_send_without_key_and_value(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    p = ctx.producer(**PLAIN)
    await p.start()
    await ctx.step(
        "send key only (tombstone)", p.send_and_wait(t, key=b"k", partition=0, timestamp_ms=BASE_TS)
    )
    await ctx.step("send str value without serializer", p.send(t, "text", partition=0))
    other = await ctx.topic("other")
    await ctx.step("send(topic) with neither key nor value", _queued(p.send(other)))


async def _queued(send: Any) -> str:
    """What a send() call gives: "queued" once it returned a handle (or what it raised)."""
    await send
    return "queued"


@scenario
async def test_serializers(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    p = ctx.producer(**PLAIN, key_serializer=str.encode, value_serializer=lambda v: repr(v).encode())
    await p.start()
    await ctx.step(
        "send with serializers", p.send_and_wait(t, {"a": 1}, key="k", partition=0, timestamp_ms=BASE_TS)
    )
    [r] = await read_back(ctx, t, 1, 1)
    ctx.out("stored", (r.key, r.value, r.serialized_key_size, r.serialized_value_size))


@scenario
async def test_producer_context_manager_and_double_start(f: Flavour, ctx: Context) -> None:
    t = await ctx.topic()
    async with f.pkg.AIOKafkaProducer(bootstrap_servers=ctx.bootstrap, **PLAIN) as p:
        await ctx.step("send in async with", p.send_and_wait(t, b"v", partition=0, timestamp_ms=BASE_TS))
    await ctx.step("send after async with", p.send(t, b"v", partition=0), within=5)


@scenario
async def test_producer_defaults(f: Flavour, ctx: Context) -> None:
    """A default producer delivers (aiokafka: acks=1, no idempotence; ours: acks=all, idempotent)."""
    t = await ctx.topic()
    p = ctx.producer()
    await p.start()
    await ctx.step("send_and_wait with defaults", p.send_and_wait(t, b"v", partition=0, timestamp_ms=BASE_TS))


@scenario
async def test_producer_constructor_checks(f: Flavour, ctx: Context) -> None:
    P = f.pkg.AIOKafkaProducer
    for label, kwargs in (
        ("acks=2", {"acks": 2}),
        ("compression_type='brotli'", {"compression_type": "brotli"}),
        ("unknown keyword", {"no_such_option": 1}),
        ("transactional_id with acks=1", {"transactional_id": "x", "acks": 1}),
        ("idempotence with acks=0", {"enable_idempotence": True, "acks": 0}),
    ):
        try:
            p = P(bootstrap_servers=ctx.bootstrap, **kwargs)
        except Exception as exc:
            # aiokafka raises ValueError; a subclass of it (KafkaConfigurationError) is as good
            ctx.out(label, [k for k in (ValueError, TypeError, RuntimeError) if isinstance(exc, k)])
        else:
            ctx.out(label, "constructed")
            ctx.closing(p)
