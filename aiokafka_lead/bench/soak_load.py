"""The soak's load and probes (``benchmarks/soak.py``): what the clients do and what is
recorded of it (the ledger), and the samples of the process's resources.

Records of ``soak-data`` are numbered per partition (``"<partition>:<seq>"``), each
partition written by one producer, so the log's order is the writer's; the transactional
copy writes each record to the same partition of ``soak-copy``.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import mmap
import os
import time
import tracemalloc
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.share import AIOKafkaShareConsumer
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

DATA, COPY = "soak-data", "soak-copy"
PARTITIONS = 6
#: how often the resources are sampled (seconds)
SAMPLE_S = 5.0


#: entries each of the ledger's records can hold: 16 Mi (hours at the soak's rates); the
#: pages are reserved, not used, until written
CAPACITY = 1 << 24


class MappedArray:
    """Numbers of one type in an anonymous memory map of fixed capacity, outside the
    allocator's heap. A growing ``array`` is reallocated as it grows, and each move leaves
    a freed block in the heap that glibc keeps resident: the ledger itself would then show
    as a slow growth of the client's RSS. A map is never moved; only its written pages are
    resident, and :meth:`nbytes` counts them."""

    def __init__(self, typecode: Literal["d", "q"], capacity: int = CAPACITY) -> None:
        self._itemsize = array(typecode).itemsize
        self._map = mmap.mmap(-1, capacity * self._itemsize)
        whole = memoryview(self._map)
        self._view: memoryview[Any] = whole.cast("d") if typecode == "d" else whole.cast("q")
        self.capacity = capacity
        self.length = 0

    def append(self, value: float) -> None:
        self[self.length] = value

    def __getitem__(self, index: int) -> Any:
        return self._view[index]

    def __setitem__(self, index: int, value: float) -> None:
        if index >= self.capacity:
            raise OverflowError(
                f"the soak's ledger holds {self.capacity} entries a record: the run made more"
            )
        self._view[index] = value
        if index >= self.length:
            self.length = index + 1

    def __iter__(self) -> Iterator[Any]:
        return iter(self._view[: self.length])

    def __len__(self) -> int:
        return self.length

    def nbytes(self) -> int:
        """The resident bytes: every page up to the last entry written."""
        used = self.length * self._itemsize
        return -(-used // mmap.PAGESIZE) * mmap.PAGESIZE


class Series:
    """(time, value) points in two mapped float arrays: 16 bytes a point, so an hour of them
    stays a small part of the process's memory (a list of tuples takes about 120 bytes a
    point), and they leave no freed blocks in the heap as they grow."""

    def __init__(self) -> None:
        self._t = MappedArray("d")
        self._v = MappedArray("d")

    def append(self, point: tuple[float, float]) -> None:
        self._t.append(point[0])
        self._v.append(point[1])

    def __iter__(self) -> Iterator[tuple[float, float]]:
        return zip(self._t, self._v, strict=True)

    def __len__(self) -> int:
        return len(self._t)

    def nbytes(self) -> int:
        return self._t.nbytes() + self._v.nbytes()


class AckedOffsets:
    """A partition's acknowledged records: per sequence number its offset plus one (0: not
    acknowledged), 8 bytes a record."""

    def __init__(self) -> None:
        self._offsets = MappedArray("q")
        self._count = 0

    def __setitem__(self, seq: int, offset: int) -> None:
        if seq >= len(self._offsets) or self._offsets[seq] == 0:
            self._count += 1
        self._offsets[seq] = offset + 1

    def __iter__(self) -> Iterator[int]:
        """The acknowledged sequence numbers."""
        return (seq for seq, stored in enumerate(self._offsets) if stored > 0)

    def __len__(self) -> int:
        return self._count

    def nbytes(self) -> int:
        return self._offsets.nbytes()


@dataclass
class Ledger:
    """What the load did, for the checks and the report."""

    started: float = field(default_factory=time.monotonic)
    next_seq: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    acked: dict[int, AckedOffsets] = field(default_factory=lambda: defaultdict(AckedOffsets))
    failed: Counter[str] = field(default_factory=Counter)
    errors: list[tuple[float, str, str]] = field(default_factory=list)  # (t, where, error)
    produce_ms: Series = field(default_factory=Series)  # (t, latency)
    e2e_ms: Series = field(default_factory=Series)
    copied: int = 0
    shared: int = 0  # records the share group acquired
    aborted: Counter[str] = field(default_factory=Counter)
    faults: list[tuple[float, float, str]] = field(default_factory=list)  # (start, end, what)
    samples: list[dict[str, Any]] = field(default_factory=list)
    loop_lag_ms: Series = field(default_factory=Series)

    def now(self) -> float:
        return time.monotonic() - self.started

    def nbytes(self) -> int:
        """What the ledger's growing records take (the probes subtract it from the RSS)."""
        series = (self.produce_ms, self.e2e_ms, self.loop_lag_ms)
        return sum(s.nbytes() for s in series) + sum(a.nbytes() for a in self.acked.values())

    def error(self, where: str, exc: BaseException) -> None:
        self.errors.append((self.now(), where, f"{type(exc).__name__}: {exc}"[:300]))


def encode(partition: int, seq: int) -> bytes:
    return f"{partition}:{seq}".encode()


def decode(value: bytes) -> tuple[int, int]:
    partition, seq = value.split(b":")
    return int(partition), int(seq)


# ------------------------------------------------------------------------------- the load
async def produce(
    producer: AIOKafkaProducer, partitions: list[int], ledger: Ledger, rate: float, stop: anyio.Event
) -> None:
    """Numbered records, round-robin over this producer's own ``partitions`` (one writer per
    partition, so its order is the log's), paced at ``rate`` records/s. Each acknowledgement
    is recorded by a callback on its handle, not a task a record: the harness's own memory
    must not grow with the records in flight (a burst after a fault would raise the heap's
    high-water mark and show as the client's RSS). Returns once every record sent resolved
    (the handles' callbacks run as their batch resolves, so ``flush()`` covers them)."""
    n = 0
    t0 = time.monotonic()
    while not stop.is_set():
        partition = partitions[n % len(partitions)]
        seq = ledger.next_seq[partition]
        ledger.next_seq[partition] += 1
        sent = time.monotonic()
        try:
            handle = await producer.send(DATA, encode(partition, seq), partition=partition)
        except KafkaError as exc:
            ledger.error("produce", exc)
            ledger.failed[type(exc).__name__] += 1
            continue
        handle.add_done_callback(functools.partial(_acked, partition, seq, sent, ledger))
        n += 1
        ahead = t0 + n / rate - time.monotonic()
        if ahead > 0:
            await anyio.sleep(ahead)
    await producer.flush()


def _acked(partition: int, seq: int, sent: float, ledger: Ledger, handle: Any) -> None:
    error = handle.exception()
    if error is not None:
        ledger.error("delivery", error)
        ledger.failed[type(error).__name__] += 1
        return
    ledger.acked[partition][seq] = handle.result().offset
    ledger.produce_ms.append((ledger.now(), (time.monotonic() - sent) * 1000))


async def copy_exactly_once(
    consumer: AIOKafkaConsumer[bytes, bytes], producer: AIOKafkaProducer, ledger: Ledger, stop: anyio.Event
) -> None:
    """read_committed -> transactional producer, each poll's records and offsets one transaction."""
    while not stop.is_set():
        try:
            batch = await consumer.getmany(timeout_ms=200, max_records=500)
        except KafkaError as exc:
            ledger.error("copy poll", exc)
            continue
        if not batch:
            continue
        try:
            async with producer.transaction():
                for tp, records in batch.items():
                    for r in records:
                        await producer.send(COPY, r.value, partition=tp.partition)
                offsets: dict[TopicPartition, OffsetAndMetadata | int] = {
                    tp: OffsetAndMetadata(rs[-1].offset + 1, "") for tp, rs in batch.items()
                }
                await producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
            ledger.copied += sum(len(rs) for rs in batch.values())
        except KafkaError as exc:
            ledger.aborted[type(exc).__name__] += 1
            ledger.error("copy transaction", exc)
            await _rewind(consumer, ledger)  # read the aborted records again


async def _rewind(consumer: AIOKafkaConsumer[bytes, bytes], ledger: Ledger) -> None:
    """Back to the committed offsets of the partitions still assigned (a partition a
    rebalance took away starts from its committed offset when it comes back anyway)."""
    with anyio.fail_after(120):
        while True:
            try:
                assigned = consumer.assignment()
                if assigned:
                    committed = await consumer.seek_to_committed(*assigned)
                    never = [tp for tp, offset in committed.items() if offset is None]
                    if never:  # nothing committed yet: from the start, as auto_offset_reset
                        await consumer.seek_to_beginning(*never)
                return
            except KafkaError as exc:  # a rebalance meanwhile, the coordinator moving
                ledger.error("copy rewind", exc)
                await anyio.sleep(0.2)


async def group_member(
    make: Callable[[], AIOKafkaConsumer[bytes, bytes]],
    ledger: Ledger,
    stop: anyio.Event,
    where: str,
    sampled: list[Any],
) -> None:
    """A group member reading soak-data until ``stop``: end-to-end latency. It is among the
    ``sampled`` clients while it runs (a member that left is not kept: the soak measures the
    clients' memory, not the harness's)."""
    consumer = make()
    sampled.append(consumer)
    try:
        async with consumer:
            await _read_as_member(consumer, ledger, stop, where)
    finally:
        sampled.remove(consumer)


async def _read_as_member(
    consumer: AIOKafkaConsumer[bytes, bytes], ledger: Ledger, stop: anyio.Event, where: str
) -> None:
    consumer.subscribe([DATA])
    while not stop.is_set():
        try:
            batch = await consumer.getmany(timeout_ms=200)
        except KafkaError as exc:
            ledger.error(where, exc)
            continue
        now_ms = time.time() * 1000
        for records in batch.values():
            for r in records[-5:]:  # a sample per batch keeps the ledger small
                ledger.e2e_ms.append((ledger.now(), now_ms - r.timestamp))


async def share_member(bootstrap: str, ledger: Ledger, stop: anyio.Event) -> None:
    """A member of the share group reading soak-data (implicit acknowledgement)."""
    consumer: AIOKafkaShareConsumer[bytes, bytes] = AIOKafkaShareConsumer(
        bootstrap_servers=bootstrap, group_id="soak-share"
    )
    async with consumer:
        consumer.subscribe([DATA])
        while not stop.is_set():
            try:
                batch = await consumer.getmany(timeout_ms=200)
            except KafkaError as exc:
                ledger.error("share member", exc)
                continue
            ledger.shared += sum(len(records) for records in batch.values())


# ---------------------------------------------------------------------------- the probes
async def loop_lag(ledger: Ledger, stop: anyio.Event) -> None:
    tick = 0.01
    while not stop.is_set():
        before = time.monotonic()
        await anyio.sleep(tick)
        ledger.loop_lag_ms.append((ledger.now(), max(time.monotonic() - before - tick, 0.0) * 1000))


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _connections(clients: list[Any]) -> dict[str, int]:
    per_node: Counter[str] = Counter()
    for client in clients:
        try:
            nodes = client._core.pool._nodes
        except KafkaError:  # a member that left, or not started yet
            continue
        for state in nodes.values():
            conn = state.conn
            if conn is not None and not conn.closed:
                per_node[f"node {conn.node_id}" if conn.node_id >= 0 else "bootstrap"] += 1
    return dict(sorted(per_node.items()))


def _malloc_trim() -> Callable[[int], object] | None:
    """glibc's ``malloc_trim(0)`` (hands the heap's free pages back to the system), or None."""
    try:
        trim: Callable[[int], object] = ctypes.CDLL("libc.so.6").malloc_trim
        return trim
    except (OSError, AttributeError):
        return None


async def sample(
    ledger: Ledger,
    clients: list[Any],
    producers: list[AIOKafkaProducer],
    stop: anyio.Event,
    *,
    trim: bool = False,
) -> None:
    """Every ``SAMPLE_S``: the process's resources. ``trim``: also the RSS once glibc handed
    its free heap pages back (``rss_trimmed_mib``), which tells memory in use from memory
    the allocator keeps."""
    malloc_trim = _malloc_trim() if trim else None
    while not stop.is_set():
        rss, ledger_mib = _rss_mib(), ledger.nbytes() / 2**20
        ledger.samples.append(
            {
                "t": round(ledger.now(), 1),
                "rss_mib": round(rss, 1),
                "ledger_mib": round(ledger_mib, 1),
                "client_rss_mib": round(rss - ledger_mib, 1),
                "fds": _fds(),
                "tasks": len(asyncio.all_tasks()),
                "connections": _connections(clients),
                "buffered_bytes": sum(p.metrics()["buffer_used"] for p in producers),
            }
        )
        if malloc_trim is not None:
            malloc_trim(0)
            ledger.samples[-1]["rss_trimmed_mib"] = round(_rss_mib() - ledger_mib, 1)
        if tracemalloc.is_tracing():
            ledger.samples[-1]["traced_mib"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
        with anyio.move_on_after(SAMPLE_S):
            await stop.wait()


async def progress(ledger: Ledger, stop: anyio.Event) -> None:
    while not stop.is_set():
        with anyio.move_on_after(10):
            await stop.wait()
        acked = sum(len(v) for v in ledger.acked.values())
        print(
            f"[{ledger.now():7.1f} s] acknowledged {acked}, copied {ledger.copied}, "
            f"errors {len(ledger.errors)}, RSS {_rss_mib():.0f} MiB",
            flush=True,
        )
