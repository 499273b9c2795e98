"""The fault matrix: one rule for every client when a background task fails.

An exception is injected into each background task in turn (sender, accumulator drain,
fetcher, group coordinator, heartbeat, metadata refresher, connection reader) while
operations are pending on the fake cluster (the broker holds their requests). Within a
deadline, every pending operation must end with ClientFailedError naming the cause,
every later call must raise it, stop() must return, and (tests/conftest.py) no
exception may be left unretrieved.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import pytest

from aiokafka_lead import AIOKafkaAdminClient, AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.admin.types import OffsetSpec
from aiokafka_lead.errors import ClientFailedError
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.producer.sender import Sender
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Drop

DEADLINE = 10.0
PRODUCE, LIST_OFFSETS, OFFSET_COMMIT = 0, 2, 8
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


class InjectedFault(RuntimeError):
    """What the patched background code raises."""


def drop(node_id: int, header: Any, request: Any) -> Drop:
    return Drop()


@dataclass
class Pending:
    """Operations started before the fault, and how to make a later call."""

    tasks: dict[str, Any] = field(default_factory=dict)  # name -> outcome (exception or result)
    handles: list[Any] = field(default_factory=list)
    later: list[Callable[[], Awaitable[Any]]] = field(default_factory=list)
    all_done: anyio.Event = field(default_factory=anyio.Event)

    def record(self, tg: anyio.abc.TaskGroup, name: str, call: Callable[[], Awaitable[Any]]) -> None:
        async def run() -> None:
            try:
                self.tasks[name] = await call()
            except Exception as exc:
                self.tasks[name] = exc
            if all(outcome is not None for outcome in self.tasks.values()):
                self.all_done.set()

        self.tasks[name] = None
        tg.start_soon(run, name=name)

    def handle(self, tg: anyio.abc.TaskGroup, handle: Any) -> None:
        self.handles.append(handle)
        self.record(tg, f"delivery handle {len(self.handles)}", handle.wait)


# ------------------------------------------------------------------ the clients


async def producer_ops(fc: FakeCluster, p: AIOKafkaProducer, tg: anyio.abc.TaskGroup, ops: Pending) -> None:
    await p.send_and_wait("t", b"warm-up", partition=0)
    fc.intercept(PRODUCE, drop, times=None)  # the broker holds every Produce from now on
    ops.handle(tg, await p.send("t", b"held", partition=0))
    ops.record(tg, "flush", p.flush)
    ops.later.append(lambda: p.send("t", b"later", partition=1))
    ops.later.append(p.flush)


async def consumer_ops(
    fc: FakeCluster, c: AIOKafkaConsumer[Any, Any], tg: anyio.abc.TaskGroup, ops: Pending
) -> None:
    assert c.coordinator is not None
    with anyio.fail_after(DEADLINE):
        await c.coordinator.stable_event.wait()
    fc.intercept(OFFSET_COMMIT, drop, times=None)
    ops.record(tg, "getmany", lambda: c.getmany(timeout_ms=60_000))
    ops.record(tg, "getone", c.getone)
    ops.record(tg, "commit", lambda: c.commit({TP0: 0}))
    ops.later.append(lambda: c.getmany(timeout_ms=0))
    ops.later.append(lambda: c.position(TP0))


async def admin_ops(fc: FakeCluster, a: AIOKafkaAdminClient, tg: anyio.abc.TaskGroup, ops: Pending) -> None:
    fc.intercept(LIST_OFFSETS, drop, times=None)
    ops.record(tg, "list_offsets", lambda: a.list_offsets({TP0: OffsetSpec.LATEST}))
    ops.later.append(a.list_topics)


@asynccontextmanager
async def client(kind: str, fc: FakeCluster) -> AsyncIterator[Any]:
    common: dict[str, Any] = {"bootstrap_servers": fc.bootstrap, "request_timeout_ms": 30_000}
    made: Any
    if kind == "producer":
        made = AIOKafkaProducer(client_id="under-test", **common)
    elif kind == "consumer":
        made = AIOKafkaConsumer(
            "t",
            client_id="under-test",
            group_id="g",
            heartbeat_interval_ms=100,
            auto_offset_reset="earliest",
            **common,
        )
    else:
        made = AIOKafkaAdminClient(client_id="under-test", **common)
    await made.start()
    try:
        yield made
    finally:
        stop = made.close if kind == "admin" else made.stop
        with anyio.fail_after(DEADLINE):
            await stop()  # returns, failure or not


OPS = {"producer": producer_ops, "consumer": consumer_ops, "admin": admin_ops}


# ------------------------------------------------------------------ the faults


class Fault:
    """Patches one background code path; ``fire`` makes it run once armed."""

    def __init__(self) -> None:
        self.armed = False
        self.fired = 0

    def check(self, where: str) -> None:
        if self.armed:
            self.fired += 1
            raise InjectedFault(f"injected into the {where}")


def patch_method(monkeypatch: pytest.MonkeyPatch, obj: Any, name: str, fault: Fault, where: str) -> None:
    original = getattr(obj, name)
    if callable(original) and hasattr(original, "__code__") and original.__code__.co_flags & 0x80:

        async def async_patched(*args: Any, **kwargs: Any) -> Any:
            fault.check(where)
            return await original(*args, **kwargs)

        monkeypatch.setattr(obj, name, async_patched)
    else:

        def patched(*args: Any, **kwargs: Any) -> Any:
            fault.check(where)
            return original(*args, **kwargs)

        monkeypatch.setattr(obj, name, patched)


def inject(
    kind: str, task: str, made: Any, fault: Fault, monkeypatch: pytest.MonkeyPatch
) -> Callable[[], None]:
    """Patch ``task`` of the client ``made``; returns what makes the patched code run."""
    core = made._core
    if task == "sender":
        # the sender's per-request task builds the request: the next batch drained runs it
        patch_method(monkeypatch, Sender, "_request", fault, task)
        return lambda: None
    if task == "accumulator drain":
        patch_method(monkeypatch, made._acc, "drain", fault, task)
        return made._acc.wake
    if task == "fetcher":
        patch_method(monkeypatch, made.fetcher, "_plan", fault, task)
        return made.fetcher.wake
    if task == "group coordinator":
        patch_method(monkeypatch, made.coordinator, "_join_and_sync", fault, task)
        return lambda: made.coordinator.request_rejoin("fault test")
    if task == "heartbeat":
        patch_method(monkeypatch, made.coordinator, "_heartbeat", fault, task)
        return lambda: None  # the next heartbeat (every 100 ms) runs it
    if task == "metadata refresher":
        patch_method(monkeypatch, core.refresher, "refresh", fault, task)
        return lambda: core.store.request_refresh("fault test")
    if task == "connection reader":
        original = Connection._dispatch

        def dispatch(conn: Connection, frame: Any) -> None:
            if conn._config.client_id == "under-test":
                fault.check(task)
            original(conn, frame)

        monkeypatch.setattr(Connection, "_dispatch", dispatch)
        return lambda: core.store.request_refresh("fault test")  # any response will do
    raise AssertionError(task)


MATRIX = [
    ("producer", "sender"),
    ("producer", "accumulator drain"),
    ("consumer", "fetcher"),
    ("consumer", "group coordinator"),
    ("consumer", "heartbeat"),
    *[(kind, "metadata refresher") for kind in ("producer", "consumer", "admin")],
    *[(kind, "connection reader") for kind in ("producer", "consumer", "admin")],
]


@pytest.mark.parametrize(("kind", "task"), MATRIX, ids=[f"{k}-{t.replace(' ', '_')}" for k, t in MATRIX])
async def test_a_failed_background_task_fails_every_call_with_its_cause(
    kind: str, task: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with anyio.fail_after(DEADLINE * 3):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2, replication_factor=1)
            async with client(kind, fc) as made, anyio.create_task_group() as tg:
                fault = Fault()
                fire = inject(kind, task, made, fault, monkeypatch)
                ops = Pending()
                await OPS[kind](fc, made, tg, ops)
                await anyio.wait_all_tasks_blocked()
                assert all(outcome is None for outcome in ops.tasks.values()), ops.tasks  # all pending
                assert not any(h.done() for h in ops.handles)

                fault.armed = True
                started = time.monotonic()
                fire()
                if task == "sender":
                    # the sender builds a request for the next batch it drains
                    ops.handle(tg, await made.send("t", b"next", partition=1))
                with anyio.fail_after(DEADLINE):
                    await ops.all_done.wait()
                elapsed = time.monotonic() - started
                assert fault.fired >= 1

                assert all(isinstance(h.exception(), ClientFailedError) for h in ops.handles)
                for name, outcome in ops.tasks.items():
                    assert isinstance(outcome, ClientFailedError), (name, outcome)
                    assert isinstance(outcome.cause, InjectedFault), (name, outcome.cause)
                    assert f"injected into the {task}" in str(outcome), (name, str(outcome))
                assert elapsed < 2.0, f"pending calls took {elapsed:.2f} s to fail"

                for later in ops.later:
                    with pytest.raises(ClientFailedError, match=f"injected into the {task}"):
                        await later()
                assert made._core._pool is None  # the failure closed the connections


async def test_async_for_over_a_failed_consumer_raises_instead_of_ending_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stopped consumer ends ``async for``; a failed one must not look like that."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with client("consumer", fc) as consumer:
                fault = Fault()
                fire = inject("consumer", "fetcher", consumer, fault, monkeypatch)
                fault.armed = True
                fire()
                with pytest.raises(ClientFailedError, match="injected into the fetcher"):
                    async for _ in consumer:
                        pass


async def test_a_failed_background_task_is_logged_once_with_its_cause(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with client("producer", fc) as producer:
                fault = Fault()
                inject("producer", "accumulator drain", producer, fault, monkeypatch)
                fault.armed = True
                with pytest.raises(ClientFailedError):
                    await producer.send_and_wait("t", b"x", partition=0)
    errors = [r for r in caplog.records if r.name == "aiokafka_lead.runtime" and r.levelname == "ERROR"]
    assert len(errors) == 1 and "injected into the accumulator drain" in errors[0].getMessage()


async def test_a_send_waiting_for_buffer_space_fails_with_the_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap, buffer_memory=4096, max_batch_size=1024, max_block_ms=30_000
            ) as producer:
                await producer.send_and_wait("t", b"warm-up", partition=0)
                fc.intercept(PRODUCE, drop, times=None)
                while producer._acc.buffer_used + 1100 <= 4096:  # fill the buffer; nothing drains
                    await producer.send("t", b"x" * 1000, partition=0)
                fault = Fault()
                fire = inject("producer", "accumulator drain", producer, fault, monkeypatch)
                ops = Pending()
                async with anyio.create_task_group() as tg:
                    ops.record(tg, "send blocked on buffer_memory", lambda: producer.send("t", b"y" * 1000))
                    await anyio.wait_all_tasks_blocked()
                    assert ops.tasks["send blocked on buffer_memory"] is None
                    fault.armed = True
                    fire()
                outcome = ops.tasks["send blocked on buffer_memory"]
                assert isinstance(outcome, ClientFailedError) and "accumulator drain" in str(outcome)
                assert producer._acc.buffer_used == 0  # every queued record failed and freed its memory
