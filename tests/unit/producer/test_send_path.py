"""send()'s common case in C (``_speedups_send.c``) against the Python path it short-cuts:
the same records in the same partitions and batches, the same buffer accounting, the same
refusals, and the event loop still gets its turns."""

from __future__ import annotations

import random
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.errors import MessageSizeTooLargeError
from aiokafka_lead.producer import producer as producer_module
from aiokafka_lead.producer.accumulator import DrainResult
from aiokafka_lead.producer.batch import DeliveryHandle
from aiokafka_lead.producer.partitioner import DefaultPartitioner
from aiokafka_lead.records import native
from aiokafka_lead.testing.fake import FakeCluster

pytestmark = pytest.mark.anyio

TOPIC = "t"
PARTITIONS = 4


def _records(seed: int) -> list[dict[str, Any]]:
    """send() keywords of every kind the paths must agree on, in a fixed random order."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i in range(3000):
        kind = rng.random()
        value: bytes | None = rng.randbytes(rng.choice([0, 1, 90, 700, 5000]))
        if kind < 0.45:
            out.append({"value": value})  # keyless: the sticky partition
        elif kind < 0.85:
            out.append({"value": value, "key": b"key-%d" % rng.randrange(50)})
        elif kind < 0.88:
            out.append({"value": None, "key": b"tombstone-%d" % i})
        elif kind < 0.92:
            out.append({"value": value, "headers": [("h", b"%d" % i)]})
        elif kind < 0.94:
            out.append({"value": value, "partition": rng.randrange(PARTITIONS)})
        elif kind < 0.96:
            # the caller's timestamp (its bounds too): the C path takes exact ints in range
            stamp = rng.choice([0, 1_700_000_000_000 + i, 2**63 - 1])
            out.append({"value": value, "key": b"key-%d" % rng.randrange(50), "timestamp_ms": stamp})
        else:
            out.append({"value": bytearray(value or b""), "key": memoryview(b"mv")})  # not bytes
    return out


async def _run(c_path: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The records of _records() sent with the C path on or off, the sender held meanwhile:
    what each send() left in the accumulator, then what the cluster stored."""
    if not c_path:
        monkeypatch.setattr(native, "SendPath", None)
    taken = 0
    accounting: list[tuple[int, int, int]] = []
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic(TOPIC, partitions=PARTITIONS)
        async with AIOKafkaProducer(
            bootstrap_servers=fc.bootstrap,
            linger_ms=5,
            max_batch_size=16_384,
            partitioner=DefaultPartitioner(random.Random(7)),
        ) as producer:
            assert (producer._fast_append is not None) is c_path
            if c_path:
                fast = producer._fast_append
                assert fast is not None

                def counted(topic: str, key: bytes | None, value: bytes | None, stamp: int | None) -> Any:
                    nonlocal taken
                    handle = fast(topic, key, value, stamp)
                    taken += handle is not None
                    return handle

                producer._fast_append = counted
            acc = producer._acc
            drain = acc.drain
            acc.drain = lambda *a, **k: DrainResult()  # type: ignore[method-assign]
            handles = []
            records = _records(seed=11)
            for kwargs in records:
                handles.append(await producer.send(TOPIC, **kwargs))
                batch = handles[-1]._batch
                accounting.append((acc.buffer_used, batch.reserved, handles[-1]._index))
            acc.drain = drain  # type: ignore[method-assign]
            acc.wake()
            await producer.flush()
            metadata = [await h for h in handles]
        stored = {p: fc.records((TOPIC, p)) for p in range(PARTITIONS)}
    return {
        "taken": taken,
        "accounting": accounting,
        "placed": [(m.partition, m.offset) for m in metadata],
        "stamped": [m.timestamp for m, kw in zip(metadata, records, strict=True) if "timestamp_ms" in kw],
        "stored": stored,
    }


async def test_the_c_path_places_and_counts_every_record_as_the_python_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert native.SendPath is not None, native.unavailable_reason
    with_c = await _run(True, monkeypatch)
    without = await _run(False, monkeypatch)
    assert with_c["placed"] == without["placed"]  # same partition, same offset, record by record
    assert with_c["stored"] == without["stored"]
    assert with_c["accounting"] == without["accounting"]  # buffer used, batch reserved, index
    assert with_c["stamped"] == without["stamped"] and len(with_c["stamped"]) > 50
    # the C path took the common case: most keyless and keyed bytes records
    assert with_c["taken"] > 0.7 * len(_records(seed=11)), with_c["taken"]


async def test_the_c_path_refuses_nothing_the_python_path_takes_and_raises_nothing_new() -> None:
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic(TOPIC, partitions=2)
        async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, max_request_size=2048) as producer:
            await producer.send_and_wait(TOPIC, b"first")  # the topic's view is cached
            fast = producer._fast_append
            assert fast is not None
            # the key's partition has no open batch: the accumulator opens one
            opened = fast(TOPIC, b"k", b"x")
            assert isinstance(opened, DeliveryHandle) and opened._index == 0
            assert fast(TOPIC, b"k", b"x")._index == 1  # into the batch just opened
            # a keyless record after its sticky partition's batch went: the partitioner
            # chooses again, in Python
            assert fast(TOPIC, None, b"x") is None
            await producer.send(TOPIC, b"x")
            assert fast("other", None, b"x") is None  # no view yet: the Python path
            assert fast(TOPIC, None, b"x" * 4096) is None  # too large: the Python path raises
            with pytest.raises(MessageSizeTooLargeError):
                await producer.send(TOPIC, b"x" * 4096)
            assert fast(TOPIC, "str key", b"x") is None  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="key must be bytes"):
                await producer.send(TOPIC, b"x", key="str key")
            stamped = fast(TOPIC, None, b"x", 5)  # a caller's timestamp: taken
            assert isinstance(stamped, DeliveryHandle) and stamped._timestamp == 5
            for bad, error in ((-1, ValueError), (2**63, ValueError), (True, TypeError), (1.5, TypeError)):
                assert fast(TOPIC, None, b"x", bad) is None  # the Python path refuses it
                with pytest.raises(error, match="timestamp_ms"):
                    await producer.send(TOPIC, b"x", timestamp_ms=bad)
            with pytest.raises(TypeError):
                fast(TOPIC, None)  # type: ignore[call-arg]
            await producer.flush()


async def test_a_record_its_open_batch_refuses_goes_to_a_new_batch_and_the_caller_yields() -> None:
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic(TOPIC, partitions=1)
        async with AIOKafkaProducer(
            bootstrap_servers=fc.bootstrap, linger_ms=60_000, max_batch_size=1024, buffer_memory=4096
        ) as producer:
            await producer.send(TOPIC, b"first")  # the topic's view is cached
            await producer.flush()
            fast = producer._fast_append
            assert fast is not None
            acc = producer._acc
            first = fast(TOPIC, b"k", b"a" * 600)
            assert isinstance(first, DeliveryHandle)
            # the open batch is full: the record opens the next one, and the caller is told to
            # give the event loop a turn first (a 1-tuple), as the Python path's append() does
            filled = fast(TOPIC, b"k", b"b" * 600)
            assert type(filled) is tuple and isinstance(filled[0], DeliveryHandle)
            assert filled[0]._batch is not first._batch and first._batch.closed
            assert acc.buffer_used == first._batch.reserved + filled[0]._batch.reserved
            # no buffer room: nothing changes and the Python path waits for space
            used, batches = acc.buffer_used, acc.pending_batches
            assert fast(TOPIC, b"k", b"c" * 3000) is None
            assert (acc.buffer_used, acc.pending_batches) == (used, batches)
            await producer.flush()
            assert (await first).offset + 1 == (await filled[0]).offset


async def test_a_send_loop_on_the_c_path_still_gives_the_loop_its_turns() -> None:
    turns = 0

    async def ticker() -> None:
        nonlocal turns
        while True:
            turns += 1
            await anyio.lowlevel.checkpoint()

    async with FakeCluster(brokers=1) as fc:
        fc.create_topic(TOPIC, partitions=1)
        async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, max_batch_size=1 << 20) as producer:
            await producer.send_and_wait(TOPIC, b"first")
            async with anyio.create_task_group() as tg:
                tg.start_soon(ticker)
                await anyio.lowlevel.checkpoint()
                before = turns
                records = 8 * (producer_module.YIELD_EVERY_MASK + 1)
                for _ in range(records):
                    await producer.send(TOPIC, b"v")  # one batch of 1 MiB holds them all
                tg.cancel_scope.cancel()
            # a turn every YIELD_EVERY_MASK + 1 records the C path places (the first send takes
            # the Python path, which counts its own)
            assert turns - before >= 7
            await producer.flush()


def test_the_send_path_refuses_a_handle_type_with_fields() -> None:
    assert native.SendPath is not None, native.unavailable_reason

    class WithFields(DeliveryHandle):
        __slots__ = ("extra",)

    with pytest.raises(TypeError, match="handle_type"):
        native.SendPath(
            views={},
            store=None,
            accumulator=None,
            sticky={},
            handle_type=WithFields,
            buffer_memory=1,
            max_request_size=1,
            record_overhead=1,
            yield_mask=1,
        )
