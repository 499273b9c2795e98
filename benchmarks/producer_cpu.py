"""CPU time per record of ``await producer.send()``, without a network in the measured part.

Run: ``.venv/bin/python -m benchmarks.producer_cpu [--records N] [--repeat R] [--aiokafka]``
(``AIOKAFKA_LEAD_NO_EXTENSIONS=1`` for the pure-Python path).

The real ``AIOKafkaProducer.send()`` fills the real accumulator; the producer is connected to
the in-process fake cluster (aiokafka_lead.testing.fake) for its metadata and producer id,
and its sender is held while the records are sent (its drain step picks nothing), so the
figure is ``send()`` and the batch append alone: argument checks, partition choice, record
encoding, the delivery handle, the coroutine. After each timed run the sender is released
and every record is delivered to the fake cluster (not timed), so the batches are real.
``--end-to-end`` also times that delivery (the batch close, CRC, the Produce request and the
answer's handling, plus the fake broker's own decoding: an upper bound).

``--otel sdk`` (or ``sdk-sampled``, ``api``) runs aiokafka_lead's ``send()`` traced by its
OpenTelemetry instrumentation (aiokafka_lead.bench.otel): a PRODUCER span and the messaging
metrics per record, with the SDK (keeping every trace, or 1% of them) or with the API's
no-op providers.

``--new-batch`` closes each record's batch after its ``send()``, as the sender's drain
does, so every record opens a new batch: ``send()`` at linger 0 and a low rate, where each
record is usually its own batch.

``--floor`` times the same loop awaiting an empty ``async def``: what a coroutine call costs.
``--aiokafka`` runs aiokafka 0.14's ``send()`` the same way: its client's metadata is filled
in by hand for one topic and its sender task is never started; a stand-in takes each full
batch off its accumulator unbuilt (aiokafka's ``send()`` waits while a partition's batch is
full), so its ``send()`` appends to its accumulator and returns its future.

CPU time (``time.process_time``) of the one process, best of ``--repeat`` runs: robust on a
busy machine, unlike wall-clock rates.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import sys
import time
from typing import Any

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.bench import otel
from aiokafka_lead.producer.accumulator import DrainResult
from aiokafka_lead.records import native
from aiokafka_lead.testing.fake import FakeCluster

TOPIC = "cpu"
PARTITIONS = 6


async def ours(  # noqa: PLR0917
    records: int,
    repeat: int,
    value_size: int,
    keyed: bool,
    end_to_end: bool,
    partitions: int = PARTITIONS,
    new_batch: bool = False,
) -> list[float]:
    value = b"v" * value_size
    keys = [b"key-%d" % (i % 1000) for i in range(1000)]
    out: list[float] = []
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic(TOPIC, partitions=partitions)
        async with AIOKafkaProducer(
            bootstrap_servers=fc.bootstrap, acks=1, buffer_memory=1 << 40, linger_ms=5
        ) as producer:
            acc = producer._acc
            drain = acc.drain
            await producer.send_and_wait(TOPIC, value)  # metadata, connection
            for _ in range(repeat):
                if not end_to_end:
                    acc.drain = lambda *a, **k: DrainResult()  # type: ignore[method-assign]
                gc.collect()
                send = producer.send
                start = time.process_time()
                if new_batch:  # each record's batch is closed after its send, as a drain closes it
                    for i in range(records):
                        (await send(TOPIC, value, keys[i % 1000] if keyed else None))._batch.close()
                elif keyed:
                    for i in range(records):
                        await send(TOPIC, value, keys[i % 1000])
                else:
                    for _ in range(records):
                        await send(TOPIC, value)
                if end_to_end:
                    await producer.flush()
                out.append((time.process_time() - start) / records * 1e6)
                acc.drain = drain  # type: ignore[method-assign]
                acc.wake()
                await producer.flush()
    return out


async def floor(records: int, repeat: int, value_size: int) -> list[float]:
    """The same loop awaiting an ``async def`` with send()'s signature that returns at once."""

    async def send(  # noqa: PLR0917 - send()'s signature
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Any = None,
    ) -> None:
        return None

    value = b"v" * value_size
    out: list[float] = []
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        for _ in range(records):
            await send(TOPIC, value)
        out.append((time.process_time() - start) / records * 1e6)
    return out


async def theirs(records: int, repeat: int, value_size: int, keyed: bool) -> list[float]:
    import aiokafka
    from aiokafka.cluster import ClusterMetadata

    value = b"v" * value_size
    keys = [b"key-%d" % (i % 1000) for i in range(1000)]
    out: list[float] = []
    producer = aiokafka.AIOKafkaProducer(acks=1, linger_ms=5, max_batch_size=16384)
    cluster: ClusterMetadata = producer._metadata
    cluster._brokers = {0: aiokafka.structs.BrokerMetadata(0, "localhost", 9092, None)}
    cluster._partitions = {TOPIC: {p: _partition_metadata(p) for p in range(PARTITIONS)}}
    cluster._broker_partitions = {0: {aiokafka.structs.TopicPartition(TOPIC, p) for p in range(PARTITIONS)}}
    producer.client._sync_task = None
    producer._sender._sender_task = None
    for _ in range(repeat):
        producer._message_accumulator = aiokafka.producer.message_accumulator.MessageAccumulator(
            cluster, 16384, 0, 30, txn_manager=None, loop=asyncio.get_running_loop(), linger_ms=5
        )
        sink = asyncio.create_task(_aiokafka_sink(producer._message_accumulator))
        gc.collect()
        send = producer.send
        start = time.process_time()
        if keyed:
            for i in range(records):
                await send(TOPIC, value, keys[i % 1000])
        else:
            for _ in range(records):
                await send(TOPIC, value)
        out.append((time.process_time() - start) / records * 1e6)
        sink.cancel()
    producer._closed = True
    return out


async def _aiokafka_sink(acc: Any) -> None:
    """aiokafka's sender stand-in: takes full batches off its accumulator (one batch per
    partition is open there; send() waits for a full one to be taken), without building them."""
    while True:
        await acc.waiter()
        for tp in list(acc._batches):
            while acc._batches[tp] and acc._batches[tp][0]._builder._closed:
                acc._pop_batch(tp)
        acc._waiter_future = asyncio.get_running_loop().create_future()


def _partition_metadata(p: int) -> Any:
    from aiokafka.structs import PartitionMetadata

    return PartitionMetadata(TOPIC, p, 0, [0], [0], None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--keyed", action="store_true", help="a key per record (murmur2 partitioning)")
    parser.add_argument("--partitions", type=int, default=PARTITIONS, help="the topic's (ours only)")
    parser.add_argument("--end-to-end", action="store_true", help="also time delivery to the fake")
    parser.add_argument(
        "--new-batch", action="store_true", help="every record into a new batch (linger 0 at a low rate)"
    )
    parser.add_argument("--aiokafka", action="store_true", help="aiokafka 0.14's send() instead")
    parser.add_argument("--floor", action="store_true", help="a coroutine call that does nothing instead")
    parser.add_argument(
        "--otel", choices=otel.MODES, help="ours traced by OpenTelemetry (SDK, SDK sampling 1%%, no-op API)"
    )
    args = parser.parse_args()
    if args.otel:
        otel.instrument(args.otel)
    if args.floor:
        runs = asyncio.run(floor(args.records, args.repeat, args.value_size))
        client = "floor (await of an empty coroutine)"
    elif args.aiokafka:
        runs = asyncio.run(theirs(args.records, args.repeat, args.value_size, args.keyed))
        client = "aiokafka " + __import__("aiokafka").__version__
    else:
        runs = asyncio.run(
            ours(
                args.records,
                args.repeat,
                args.value_size,
                args.keyed,
                args.end_to_end,
                args.partitions,
                args.new_batch,
            )
        )
        reason = native.unavailable_reason
        ext = "C extension" if reason is None else f"pure Python ({reason})"
        client = f"aiokafka_lead ({ext}{', OpenTelemetry ' + args.otel if args.otel else ''})"
    print(
        f"{client}: {'keyed' if args.keyed else 'keyless'} {args.value_size} B records, "
        f"{args.records} per run, {'send + delivery' if args.end_to_end else 'send() only'}, "
        f"{'a new batch per record, ' if args.new_batch else ''}"
        f"{args.partitions if not (args.floor or args.aiokafka) else PARTITIONS} partitions"
    )
    print(f"  CPU us/record: best {min(runs):.3f}, runs {' '.join(f'{r:.3f}' for r in runs)}")
    print(f"  python {platform.python_version()}, {platform.machine()}, load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
