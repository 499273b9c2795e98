"""One side (producer or consumer) of one client in the throughput benchmark, in its own process.

Produces ``--records`` records of ``--size`` bytes (no key, ``--acks`` 1 or all with
idempotence, linger 5 ms) to
``--topic``, or consumes ``--records`` records of it from the earliest offset (assign mode,
no group), and prints one ``RESULT <json>`` line: records, seconds, records/s and the peak
RSS of this process (``ru_maxrss``). While it runs it prints ``PROGRESS <done>`` lines about
twice a second for the orchestrator.

    python benchmarks/throughput_client.py --client aiokafka --side produce --bootstrap-server H:P --topic T

With ``--profile FILE`` the measured part runs under cProfile and the stats go to FILE
(``python -m pstats FILE``); the rate measured that way is not comparable with the others.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from typing import Any

PROGRESS_EVERY_S = 0.5


class CpuClock:
    """CPU seconds of the whole process (every thread: librdkafka's too) over the measured part."""

    def __init__(self) -> None:
        self.begin = self.seconds = 0.0

    def start(self) -> None:
        self.begin = time.process_time()

    def stop(self) -> None:
        self.seconds = time.process_time() - self.begin


CPU = CpuClock()


class Progress:
    """``PROGRESS <n>`` on stdout at most every ``PROGRESS_EVERY_S`` seconds."""

    def __init__(self) -> None:
        self.next_at = time.monotonic() + PROGRESS_EVERY_S

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now >= self.next_at:
            self.next_at = now + PROGRESS_EVERY_S
            print(f"PROGRESS {done}", flush=True)


@contextlib.contextmanager
def profiled(path: str | None) -> Iterator[None]:
    if path is None:
        yield
        return
    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        profile.dump_stats(path)


async def timed_produce(producer: Any, args: argparse.Namespace, payload: bytes, progress: Progress) -> float:
    """The measured part for both asyncio clients (same ``send``/``flush`` API): seconds taken."""
    with profiled(args.profile):
        started = time.perf_counter()
        CPU.start()
        for i in range(args.records):
            await producer.send(args.topic, payload)
            if not i & 0x3FFF:
                progress(i)
        await producer.flush()
        CPU.stop()
        return time.perf_counter() - started


async def timed_consume(consumer: Any, args: argparse.Namespace, progress: Progress) -> float:
    """The measured part for both asyncio clients (same ``getmany`` API): every value is read."""
    with profiled(args.profile):
        started = time.perf_counter()
        CPU.start()
        count = volume = 0
        while count < args.records:
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                count += len(records)
                for record in records:
                    volume += len(record.value)
            progress(count)
        CPU.stop()
        return time.perf_counter() - started


def _python_acks(args: argparse.Namespace) -> dict[str, Any]:
    """acks=1 without idempotence, or acks=all with it (aiokafka's and our keywords)."""
    if args.acks == "1":
        return {"acks": 1, "enable_idempotence": False}
    return {"acks": "all", "enable_idempotence": True}


# ------------------------------------------------------------------ aiokafka_lead
async def produce_ours(args: argparse.Namespace, payload: bytes, progress: Progress) -> float:
    from aiokafka_lead import AIOKafkaProducer

    async with AIOKafkaProducer(
        bootstrap_servers=args.bootstrap_server, linger_ms=5, **_python_acks(args)
    ) as producer:
        await producer.partitions_for(args.topic)
        return await timed_produce(producer, args, payload, progress)


async def consume_ours(args: argparse.Namespace, progress: Progress) -> float:
    from aiokafka_lead import AIOKafkaConsumer
    from aiokafka_lead.structs import TopicPartition

    async with AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap_server, auto_offset_reset="earliest", enable_auto_commit=False
    ) as consumer:
        consumer.assign([TopicPartition(args.topic, p) for p in range(args.partitions)])
        return await timed_consume(consumer, args, progress)


# ------------------------------------------------------------------------ aiokafka
async def produce_aiokafka(args: argparse.Namespace, payload: bytes, progress: Progress) -> float:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap_server, linger_ms=5, **_python_acks(args))
    await producer.start()
    try:
        await producer.partitions_for(args.topic)
        return await timed_produce(producer, args, payload, progress)
    finally:
        await producer.stop()


async def consume_aiokafka(args: argparse.Namespace, progress: Progress) -> float:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap_server, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(args.topic, p) for p in range(args.partitions)])
        return await timed_consume(consumer, args, progress)
    finally:
        await consumer.stop()


# ------------------------------------------------------------------ confluent-kafka
def produce_confluent(args: argparse.Namespace, payload: bytes, progress: Progress) -> float:
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": args.bootstrap_server,
            "linger.ms": 5,
            "acks": 1 if args.acks == "1" else "all",
            "enable.idempotence": args.acks == "all",
        }
    )
    producer.list_topics(args.topic, timeout=30)
    failed = 0

    def delivered(err: Any, _msg: Any) -> None:
        nonlocal failed
        if err is not None:
            failed += 1

    with profiled(args.profile):
        started = time.perf_counter()
        CPU.start()
        for i in range(args.records):
            while True:
                try:
                    producer.produce(args.topic, payload, on_delivery=delivered)
                    break
                except BufferError:  # the local queue is full: serve callbacks, then retry
                    producer.poll(0.01)
            producer.poll(0)
            if not i & 0x3FFF:
                progress(i)
        remaining = producer.flush(120)
        elapsed = time.perf_counter() - started
        CPU.stop()
    if remaining or failed:
        raise RuntimeError(f"confluent-kafka: {failed} failed, {remaining} undelivered")
    return elapsed


def consume_confluent(args: argparse.Namespace, progress: Progress) -> float:
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": args.bootstrap_server,
            "group.id": f"throughput-{os.getpid()}",  # required by the client; unused with assign()
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign(
            [
                confluent_kafka.TopicPartition(args.topic, p, confluent_kafka.OFFSET_BEGINNING)
                for p in range(args.partitions)
            ]
        )
        with profiled(args.profile):
            started = time.perf_counter()
            CPU.start()
            count = volume = 0
            while count < args.records:
                for message in consumer.consume(num_messages=10_000, timeout=1.0):
                    if message.error() is not None:
                        if message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                            continue
                        raise confluent_kafka.KafkaException(message.error())
                    count += 1
                    volume += len(message.value())
                progress(count)
            CPU.stop()
            return time.perf_counter() - started
    finally:
        consumer.close()


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--client", required=True, choices=["ours", "aiokafka", "confluent"])
    parser.add_argument("--side", required=True, choices=["produce", "consume"])
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, required=True, help="the topic's partition count")
    parser.add_argument("--acks", choices=["1", "all"], default="1", help="all: with idempotence")
    parser.add_argument("--profile", help="write cProfile stats of the measured part here")
    args = parser.parse_args()
    progress = Progress()
    rss_before = peak_rss_mib()
    if args.side == "produce":
        payload = os.urandom(args.size)
        if args.client == "confluent":
            seconds = produce_confluent(args, payload, progress)
        elif args.client == "aiokafka":
            seconds = asyncio.run(produce_aiokafka(args, payload, progress))
        else:
            seconds = asyncio.run(produce_ours(args, payload, progress))
    elif args.client == "confluent":
        seconds = consume_confluent(args, progress)
    elif args.client == "aiokafka":
        seconds = asyncio.run(consume_aiokafka(args, progress))
    else:
        seconds = asyncio.run(consume_ours(args, progress))
    result = {
        "client": args.client,
        "side": args.side,
        "records": args.records,
        "seconds": seconds,
        "records_per_s": args.records / seconds,
        "cpu_us_per_record": CPU.seconds / args.records * 1e6,
        "peak_rss_mib": peak_rss_mib(),
        "rss_at_start_mib": rss_before,
    }
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
