"""Running one hostile-broker case: a fake cluster whose broker lies once, a client doing
one operation through the lie and then a healthy one, and the rules every case checks.

Each case gets a fresh FakeCluster and clients with short timeouts. The lie (a field lie
from :mod:`tests.support.lies` or a wire fault from :mod:`tests.support.script_server`)
answers one request of its API; then:

* the operation through the lie either succeeds (the client noticed and recovered, or the
  lie was harmless) or raises a ``KafkaError`` (never a bare ``IndexError``/``TypeError``/
  ``struct.error``/exception group) whose message says what failed, within the deadline;
* a healthy operation afterwards succeeds (same client when it is still running);
* nothing is left behind: no task, no socket;
* the event loop is never blocked for more than MAX_BLOCK_S (0.5 s) of CPU by one callback (the
  client's 100 ms goal is measured by benchmarks/metadata_scale.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.records import RecordBatchBuilder
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from tests.support.loop_lag import watch_loop

#: every case ends well within this (a stalled answer costs one request timeout)
DEADLINE_S = 8.0
REQUEST_TIMEOUT_MS = 600
TP = TopicPartition("t", 0)
#: what an error message must mention (some of): the API, a broker, the partition or topic
#: the APIs an error may name (``check_error(..., named=True)`` requires one)
API_NAMES = re.compile(
    r"Metadata|Produce|Fetch|ListOffsets|FindCoordinator|InitProducerId|ApiVersions|OffsetFetch|"
    r"OffsetCommit|OffsetForLeaderEpoch|JoinGroup|SyncGroup|Heartbeat|LeaveGroup|ConsumerGroupHeartbeat|"
    r"AddPartitionsToTxn|AddOffsetsToTxn|TxnOffsetCommit|EndTxn|CreateTopics|DeleteTopics|DescribeConfigs|"
    r"AlterConfigs|IncrementalAlterConfigs|ElectLeaders|DescribeGroups|ListGroups|DeleteRecords|"
    r"CreatePartitions|DescribeCluster|DeleteGroups|ConsumerGroupDescribe"
)
BROKER = re.compile(r"node -?\d+|bootstrap|127\.0\.0\.1:\d+")
NAMES = re.compile(
    rf"{API_NAMES.pattern}|node \d|bootstrap|broker|t-0|'t'|topic|partition|coordinator|group", re.IGNORECASE
)


@dataclass
class Report:
    """What one case did: the error of the operation through the lie (None: it succeeded)."""

    error: BaseException | None = None
    notes: list[str] = field(default_factory=list)
    value: Any = None  # what the operation through the lie returned


def producer(fc: FakeCluster, **kwargs: Any) -> AIOKafkaProducer:
    kwargs.setdefault("request_timeout_ms", REQUEST_TIMEOUT_MS)
    kwargs.setdefault("delivery_timeout_ms", 2 * REQUEST_TIMEOUT_MS)
    kwargs.setdefault("max_block_ms", 2 * REQUEST_TIMEOUT_MS)
    kwargs.setdefault("retry_backoff_ms", 10)
    kwargs.setdefault("retry_backoff_max_ms", 50)
    return AIOKafkaProducer(bootstrap_servers=fc.bootstrap, **kwargs)


def consumer(fc: FakeCluster, **kwargs: Any) -> AIOKafkaConsumer[bytes, bytes]:
    kwargs.setdefault("request_timeout_ms", REQUEST_TIMEOUT_MS)
    kwargs.setdefault("retry_backoff_ms", 10)
    kwargs.setdefault("retry_backoff_max_ms", 50)
    kwargs.setdefault("fetch_max_wait_ms", 50)
    kwargs.setdefault("auto_offset_reset", "earliest")
    kwargs.setdefault("enable_auto_commit", False)
    return AIOKafkaConsumer(bootstrap_servers=fc.bootstrap, **kwargs)


def append(fc: FakeCluster, values: list[bytes], tp: TopicPartition = TP) -> None:
    builder = RecordBatchBuilder()
    for i, value in enumerate(values):
        builder.append(1_700_000_000_000 + i, None, value, ())
    fc.partition(tp).append(builder.build(-1, -1, -1))
    fc.notify()


async def read(c: AIOKafkaConsumer[bytes, bytes], count: int) -> list[bytes]:
    """``count`` values (bound the caller with a deadline)."""
    out: list[bytes] = []
    while len(out) < count:
        for records in (await c.getmany(timeout_ms=100)).values():
            out.extend(r.value for r in records if r.value is not None)
    return out


def check_error(error: BaseException | None, *, named: bool = False, broker: bool = True) -> None:
    """A KafkaError that says what failed; ``named``: it names an API and (``broker``) the broker."""
    if error is None:
        return
    assert isinstance(error, KafkaError), f"not a KafkaError: {error!r}"
    assert NAMES.search(str(error)), f"the error does not say what failed: {error!r}"
    if named:
        assert API_NAMES.search(str(error)), f"the error does not name the API: {error!r}"
        assert not broker or BROKER.search(str(error)), f"the error does not name the broker: {error!r}"


async def through(operation: Awaitable[Any], report: Report) -> Any:
    """Run the operation through the lie, recording its KafkaError (others propagate)."""
    try:
        report.value = await operation
        return report.value
    except KafkaError as exc:
        report.error = exc
        return None


def _sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with suppress(OSError):
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return count


@asynccontextmanager
async def hostile_case(brokers: int = 1, partitions: int = 1) -> AsyncIterator[FakeCluster]:
    """A fresh cluster (topic ``t``) inside the suite's rules (leaks, loop blocks, deadline)."""
    async with case_rules(), FakeCluster(brokers=brokers, strict=False) as fc:
        fc.create_topic("t", partitions=partitions)
        yield fc


@asynccontextmanager
async def case_rules() -> AsyncIterator[None]:
    """The suite's rules around one case: its deadline, no task or socket left behind, no
    loop block over MAX_BLOCK_S of CPU."""
    tasks_before = set(asyncio.all_tasks())
    sockets_before = _sockets()
    async with watch_loop() as watch:
        with anyio.fail_after(DEADLINE_S):
            yield
    for _ in range(3):
        await asyncio.sleep(0)
    leaked = [t for t in asyncio.all_tasks() - tasks_before if not t.done()]
    assert not leaked, f"tasks left behind: {leaked}"
    assert _sockets() <= sockets_before, f"sockets left behind: {_sockets() - sockets_before}"
    watch.assert_responsive()


#: the longest a broker that lies on every answer is watched before it tells the truth
PERSISTENT_MAX_S = 4.0


@contextmanager
def warning_seen() -> Iterator[anyio.Event]:
    """An event set when the client logs a WARNING (or worse)."""
    event = anyio.Event()

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                event.set()

    handler, logger = Seen(), logging.getLogger("aiokafka_lead")
    logger.addHandler(handler)
    try:
        yield event
    finally:
        logger.removeHandler(handler)


async def until_reported(warned: anyio.Event, body: Callable[[], Awaitable[None]]) -> None:
    """Run ``body`` until it returns, the client warns (``warned``), or PERSISTENT_MAX_S."""
    with anyio.move_on_after(PERSISTENT_MAX_S):
        async with anyio.create_task_group() as tg:

            async def stop_when_warned() -> None:
                await warned.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(stop_when_warned)
            await body()
            tg.cancel_scope.cancel()


Scenario = Callable[[Any], Awaitable[Report]]
