"""Cancelling any public coroutine at any await point leaks nothing.

Each public coroutine of the three clients runs against the fake cluster and is cancelled
after 0, 1, 2, ... turns of the event loop, so the cancellation lands at every await point
it passes (before a request, with it in flight, while decoding, after it finished). After
each cancellation the client must still work, and once it settles there are no more tasks
(connections, fetches, ...) and no more open connections than before, and the
producer holds no buffer memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from aiokafka_lead import AIOKafkaAdminClient, AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka_lead.admin.types import OffsetSpec
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.consumer.util import produce

DEADLINE = 20.0
TURNS = range(0, 48, 3)  # every third loop turn: long enough to see each op finish uncancelled
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
Op = Callable[[Any, FakeCluster], Awaitable[Any]]


async def cancelled_after(turns: int, op: Callable[[], Awaitable[Any]]) -> bool:
    """Run ``op`` and cancel it after ``turns`` loop turns; True if it finished first."""
    finished = False

    async def body() -> None:
        nonlocal finished
        await op()
        finished = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(body)
        for _ in range(turns):
            await anyio.lowlevel.checkpoint()
        tg.cancel_scope.cancel()
    return finished


def live_tasks() -> int:
    """Tasks alive now, except the consumer's long-poll fetches (one per node, always coming
    and going: bounded by design, checked by the fetcher's own tests)."""
    return sum(1 for t in asyncio.all_tasks() if not t.done() and not t.get_name().startswith("fetch node"))


TASKS_PER_CONNECTION = 3  # Connection.run, its reader, and the fake broker's handler


async def settled(client: Any, tasks: int, connections: int) -> None:
    """Wait until no task is left beyond the baseline (``tasks`` with ``connections`` open):
    a connection closed by a cancellation ends its tasks soon after, one re-opened adds some."""
    while live_tasks() > tasks + TASKS_PER_CONNECTION * (live_connections(client) - connections):  # noqa: ASYNC110
        await anyio.sleep(0.005)


def live_connections(client: Any) -> int:
    pool = client._core.pool
    return sum(1 for s in pool._nodes.values() if s.conn is not None and not s.conn.closed)


# ----------------------------------------------------------------- the clients


@asynccontextmanager
async def cluster() -> AsyncIterator[FakeCluster]:
    async with FakeCluster(brokers=2) as fc:
        fc.create_topic("t", partitions=2, leaders=[1, 2])
        for tp in (TP0, TP1):
            produce(fc, tp, [b"r0", b"r1", b"r2"])
        yield fc


def producer(fc: FakeCluster) -> AIOKafkaProducer:
    return AIOKafkaProducer(bootstrap_servers=fc.bootstrap, request_timeout_ms=5000)


def consumer(fc: FakeCluster) -> AIOKafkaConsumer[bytes, bytes]:
    return AIOKafkaConsumer(
        "t",
        bootstrap_servers=fc.bootstrap,
        group_id="g",
        auto_offset_reset="earliest",
        request_timeout_ms=5000,
        fetch_max_wait_ms=50,
        heartbeat_interval_ms=200,
        enable_auto_commit=False,
    )


def admin(fc: FakeCluster) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(bootstrap_servers=fc.bootstrap, request_timeout_ms=5000)


async def send_batch(p: AIOKafkaProducer, fc: FakeCluster) -> Any:
    batch = p.create_batch()
    batch.append(value=b"b")
    return await p.send_batch(batch, "t", partition=1)


async def fresh(fc: FakeCluster, read: Awaitable[Any]) -> Any:
    """A record arrives, then the read returns it (instead of waiting for its timeout)."""
    produce(fc, TP0, [b"new"])
    return await read


PRODUCER_OPS: dict[str, Op] = {
    "send": lambda p, fc: p.send("t", b"v", partition=0),
    "send_and_wait": lambda p, fc: p.send_and_wait("t", b"v", partition=1),
    "flush": lambda p, fc: p.flush(),
    "partitions_for": lambda p, fc: p.partitions_for("t"),
    "send_batch": send_batch,
}
CONSUMER_OPS: dict[str, Op] = {
    "getmany": lambda c, fc: fresh(fc, c.getmany(timeout_ms=5000)),
    "getone": lambda c, fc: fresh(fc, c.getone()),
    "getmany_batches": lambda c, fc: fresh(fc, c.getmany_batches(timeout_ms=5000)),
    "commit": lambda c, fc: c.commit(),
    "committed": lambda c, fc: c.committed(TP0),
    "position": lambda c, fc: c.position(TP1),
    "seek_to_committed": lambda c, fc: c.seek_to_committed(TP0),
    "beginning_offsets": lambda c, fc: c.beginning_offsets([TP0, TP1]),
    "end_offsets": lambda c, fc: c.end_offsets([TP0, TP1]),
    "offsets_for_times": lambda c, fc: c.offsets_for_times({TP0: 0}),
    "topics": lambda c, fc: c.topics(),
}
ADMIN_OPS: dict[str, Op] = {
    "list_topics": lambda a, fc: a.list_topics(),
    "describe_topics": lambda a, fc: a.describe_topics(["t"]),
    "list_offsets": lambda a, fc: a.list_offsets({TP0: OffsetSpec.LATEST, TP1: OffsetSpec.EARLIEST}),
    "find_coordinator": lambda a, fc: a.find_coordinator("g"),
    "list_consumer_group_offsets": lambda a, fc: a.list_consumer_group_offsets("g"),
}


async def still_works(kind: str, client: Any) -> None:
    if kind == "producer":
        assert (await client.send_and_wait("t", b"check", partition=0)).offset >= 3
        await client.flush()
        assert client._acc.buffer_used == 0 and client._acc.pending_batches == 0
    elif kind == "consumer":
        await client.commit()
        assert "t" in await client.topics()
    else:
        assert "t" in await client.list_topics()


CASES = [
    *[("producer", name) for name in PRODUCER_OPS],
    *[("consumer", name) for name in CONSUMER_OPS],
    *[("admin", name) for name in ADMIN_OPS],
]
MAKERS: dict[str, Callable[[FakeCluster], Any]] = {"producer": producer, "consumer": consumer, "admin": admin}
OPS: dict[str, dict[str, Op]] = {"producer": PRODUCER_OPS, "consumer": CONSUMER_OPS, "admin": ADMIN_OPS}


@pytest.mark.parametrize(("kind", "name"), CASES, ids=[f"{k}.{n}" for k, n in CASES])
async def test_cancelling_a_public_coroutine_anywhere_leaks_nothing(kind: str, name: str) -> None:
    op = OPS[kind][name]
    with anyio.fail_after(DEADLINE):
        async with cluster() as fc, MAKERS[kind](fc) as client:
            if kind == "consumer":
                assert client.coordinator is not None
                await client.coordinator.stable_event.wait()
            await op(client, fc)  # warm: every connection this op needs is open
            await still_works(kind, client)
            baseline, connections = live_tasks(), live_connections(client)
            outcomes = []
            for turns in TURNS:
                outcomes.append(await cancelled_after(turns, lambda: op(client, fc)))
                await still_works(kind, client)
                # one more is fine (e.g. the bootstrap link again); the pool holds one per node
                assert live_connections(client) <= connections + 1
                await settled(client, baseline, connections)
            if (kind, name) == ("producer", "send"):
                # a cancelled send() queued nothing, a finished one exactly its record
                sent = [r for r in fc.records(TP0) if r[2] == b"v"]
                assert len(sent) == 1 + sum(outcomes)
            assert outcomes[-1], (
                f"{name} did not finish within {TURNS[-1]} loop turns: the sweep missed its end"
            )


LIFECYCLE = [(kind, step) for kind in MAKERS for step in ("start", "stop")]


@pytest.mark.parametrize(("kind", "step"), LIFECYCLE, ids=[f"{k}.{s}" for k, s in LIFECYCLE])
async def test_cancelling_start_or_stop_anywhere_leaves_nothing_running(kind: str, step: str) -> None:
    with anyio.fail_after(DEADLINE * 2):
        async with cluster() as fc:
            baseline = live_tasks()
            for turns in TURNS:
                client = MAKERS[kind](fc)
                if step == "start":
                    finished = await cancelled_after(turns, client.start)
                    if finished:
                        await still_works(kind, client)
                else:
                    await client.start()
                    await still_works(kind, client)
                    finished = await cancelled_after(turns, client.close if kind == "admin" else client.stop)
                await (client.close() if kind == "admin" else client.stop())  # always returns
                while live_tasks() > baseline:  # noqa: ASYNC110 - no event for "a task ended"
                    await anyio.sleep(0.005)
                assert client._core._pool is None  # every connection closed
