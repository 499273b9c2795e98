"""One side (producer or consumer) of one client in the throughput benchmark, in its own process.

Produces ``--records`` records whose values cycle through the ``--payload-file``'s
``--size``-byte values (no key, ``--acks`` 1 or all
with idempotence, linger 5 ms, ``--compression``) to ``--topic``, or consumes ``--records``
records of it from the earliest offset (assign mode, no group), and prints one
``RESULT <json>`` line: records, seconds, records/s, CPU per record and the peak RSS of this
process (``ru_maxrss``). While it runs it prints ``PROGRESS <done>`` lines about
twice a second for the orchestrator.

    python benchmarks/throughput_client.py --client aiokafka --side produce --bootstrap-server H:P \
        --topic T --partitions 6 --records 100000 --size 100 --payload-file values.bin

``confluent-aio`` is confluent-kafka's asyncio classes (``confluent_kafka.aio``: librdkafka
behind a thread pool); the Java client's side is benchmarks/java/ThroughputClient.java.

With ``AIOKAFKA_LEAD_BENCH_OTEL=sdk`` (or ``api``) aiokafka_lead's side runs traced by its
OpenTelemetry instrumentation, aiokafka's by opentelemetry-instrumentation-aiokafka: with the
SDK (spans batched to an exporter that drops them, metrics in an in-memory reader), or with
the API's no-op providers.

With ``--profile FILE`` the measured part runs under cProfile and the stats go to FILE
(``python -m pstats FILE``); the rate measured that way is not comparable with the others.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import cProfile
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PROGRESS_EVERY_S = 0.5
#: confluent_kafka.aio deliveries left outstanding at most (librdkafka queues 100,000)
AIO_OUTSTANDING = 50_000


class CpuClock:
    """CPU seconds of the whole process (every thread: librdkafka's too) over the measured part,
    and the kernel's share of them (system time: on loopback the receiving side's TCP work is
    mostly charged to the sender)."""

    def __init__(self) -> None:
        self.begin = self.seconds = 0.0
        self.begin_sys = self.sys_seconds = 0.0

    def start(self) -> None:
        self.begin = time.process_time()
        self.begin_sys = os.times().system

    def stop(self) -> None:
        self.seconds = time.process_time() - self.begin
        self.sys_seconds = os.times().system - self.begin_sys


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


async def timed_produce(
    producer: Any, args: argparse.Namespace, values: list[bytes], progress: Progress
) -> float:
    """The measured part for both asyncio clients (same ``send``/``flush`` API): seconds taken."""
    with profiled(args.profile):
        started = time.perf_counter()
        CPU.start()
        for i in range(args.records):
            await producer.send(args.topic, values[i % len(values)])
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
    """acks=1 without idempotence, or acks=all with it, and the compression codec (aiokafka's
    and our keywords)."""
    codec = {"compression_type": args.compression} if args.compression != "none" else {}
    if args.acks == "1":
        return {"acks": 1, "enable_idempotence": False, **codec}
    return {"acks": "all", "enable_idempotence": True, **codec}


def _confluent_producer_config(args: argparse.Namespace) -> dict[str, Any]:
    """The same producer settings in librdkafka's names."""
    return {
        "bootstrap.servers": args.bootstrap_server,
        "linger.ms": 5,
        "acks": 1 if args.acks == "1" else "all",
        "enable.idempotence": args.acks == "all",
        "compression.type": args.compression,
    }


def _confluent_consumer_config(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "bootstrap.servers": args.bootstrap_server,
        "group.id": f"throughput-{os.getpid()}",  # required by the client; unused with assign()
        "enable.auto.commit": False,
    }


def _checked(message: Any) -> bool:
    """True for a record; False for a partition-EOF event; raises a consumer error."""
    import confluent_kafka

    if message.error() is None:
        return True
    if message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
        return False
    raise confluent_kafka.KafkaException(message.error())


# ------------------------------------------------------------------ aiokafka_lead
def traced_if_asked(client: str = "ours") -> None:
    """Instrument the client as ``$AIOKAFKA_LEAD_BENCH_OTEL`` says (sdk, api or unset)."""
    from aiokafka_lead.bench import otel

    mode = os.environ.get(otel.OTEL_ENV)
    if mode:
        otel.instrument(mode, client)


async def produce_ours(args: argparse.Namespace, values: list[bytes], progress: Progress) -> float:
    from aiokafka_lead import AIOKafkaProducer

    traced_if_asked()
    async with AIOKafkaProducer(
        bootstrap_servers=args.bootstrap_server, linger_ms=5, **_python_acks(args)
    ) as producer:
        await producer.partitions_for(args.topic)
        return await timed_produce(producer, args, values, progress)


async def consume_ours(args: argparse.Namespace, progress: Progress) -> float:
    from aiokafka_lead import AIOKafkaConsumer
    from aiokafka_lead.structs import TopicPartition

    traced_if_asked()
    async with AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap_server, auto_offset_reset="earliest", enable_auto_commit=False
    ) as consumer:
        consumer.assign([TopicPartition(args.topic, p) for p in range(args.partitions)])
        return await timed_consume(consumer, args, progress)


# ------------------------------------------------------------------------ aiokafka
async def produce_aiokafka(args: argparse.Namespace, values: list[bytes], progress: Progress) -> float:
    from aiokafka import AIOKafkaProducer

    traced_if_asked("aiokafka")
    producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap_server, linger_ms=5, **_python_acks(args))
    await producer.start()
    try:
        await producer.partitions_for(args.topic)
        return await timed_produce(producer, args, values, progress)
    finally:
        await producer.stop()


async def consume_aiokafka(args: argparse.Namespace, progress: Progress) -> float:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    traced_if_asked("aiokafka")
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
def produce_confluent(args: argparse.Namespace, values: list[bytes], progress: Progress) -> float:
    import confluent_kafka

    producer = confluent_kafka.Producer(_confluent_producer_config(args))
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
                    producer.produce(args.topic, values[i % len(values)], on_delivery=delivered)
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

    consumer = confluent_kafka.Consumer(_confluent_consumer_config(args))
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
                    if _checked(message):
                        count += 1
                        volume += len(message.value())
                progress(count)
            CPU.stop()
            return time.perf_counter() - started
    finally:
        consumer.close()


# -------------------------------------------------------------- confluent_kafka.aio
async def produce_confluent_aio(args: argparse.Namespace, values: list[bytes], progress: Progress) -> float:
    """``await produce()`` per record (it returns the delivery future), then ``flush()``, as
    confluent-kafka's asyncio documentation shows. ``produce()`` does not wait for room in
    librdkafka's queue (100,000 messages): a record that finds it full fails, so at most
    ``AIO_OUTSTANDING`` deliveries are left outstanding (the oldest awaited first)."""
    from confluent_kafka.aio import AIOProducer

    failed = 0
    first_error: BaseException | None = None

    def delivered(future: asyncio.Future[Any]) -> None:
        nonlocal failed, first_error
        error = asyncio.CancelledError() if future.cancelled() else future.exception()
        if error is not None:
            failed += 1
            first_error = first_error or error

    producer = AIOProducer(_confluent_producer_config(args))
    outstanding: collections.deque[asyncio.Future[Any]] = collections.deque()
    try:
        await producer.list_topics(args.topic, timeout=30)
        with profiled(args.profile):
            started = time.perf_counter()
            CPU.start()
            for i in range(args.records):
                delivery = await producer.produce(args.topic, values[i % len(values)])
                delivery.add_done_callback(delivered)
                outstanding.append(delivery)
                while outstanding and outstanding[0].done():
                    outstanding.popleft()
                if len(outstanding) > AIO_OUTSTANDING:
                    await asyncio.wait([outstanding.popleft()])
                if not i & 0x3FFF:
                    progress(i)
            await producer.flush(120)
            elapsed = time.perf_counter() - started
            CPU.stop()
    finally:
        await producer.close()
    if failed:
        raise RuntimeError(f"confluent_kafka.aio: {failed} failed, the first with {first_error!r}")
    return elapsed


async def consume_confluent_aio(args: argparse.Namespace, progress: Progress) -> float:
    import confluent_kafka
    from confluent_kafka.aio import AIOConsumer

    consumer = AIOConsumer(_confluent_consumer_config(args))
    try:
        await consumer.assign(
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
                for message in await consumer.consume(num_messages=10_000, timeout=1.0):
                    if _checked(message):
                        count += 1
                        volume += len(message.value())
                progress(count)
            CPU.stop()
            return time.perf_counter() - started
    finally:
        await consumer.close()


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


#: client kind -> its producing side (a coroutine function for the asyncio clients)
PRODUCERS: dict[str, Any] = {
    "ours": produce_ours,
    "aiokafka": produce_aiokafka,
    "confluent": produce_confluent,
    "confluent-aio": produce_confluent_aio,
}
#: client kind -> its consuming side
CONSUMERS: dict[str, Any] = {
    "ours": consume_ours,
    "aiokafka": consume_aiokafka,
    "confluent": consume_confluent,
    "confluent-aio": consume_confluent_aio,
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--client", required=True, choices=[*PRODUCERS])
    parser.add_argument("--side", required=True, choices=["produce", "consume"])
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, required=True, help="bytes per value")
    parser.add_argument("--payload-file", required=True, help="the values, --size bytes each, end to end")
    parser.add_argument("--partitions", type=int, required=True, help="the topic's partition count")
    parser.add_argument("--acks", choices=["1", "all"], default="1", help="all: with idempotence")
    parser.add_argument("--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"], default="none")
    parser.add_argument("--profile", help="write cProfile stats of the measured part here")
    args = parser.parse_args()
    progress = Progress()
    rss_before = peak_rss_mib()
    if args.side == "produce":
        data = Path(args.payload_file).read_bytes()
        values = [data[at : at + args.size] for at in range(0, len(data), args.size)]
        run: Any = PRODUCERS[args.client]
        outcome = run(args, values, progress)
    else:
        run = CONSUMERS[args.client]
        outcome = run(args, progress)
    seconds: float = asyncio.run(outcome) if asyncio.iscoroutine(outcome) else outcome
    result = {
        "client": args.client,
        "side": args.side,
        "records": args.records,
        "seconds": seconds,
        "records_per_s": args.records / seconds,
        "cpu_us_per_record": CPU.seconds / args.records * 1e6,
        "cpu_sys_us_per_record": CPU.sys_seconds / args.records * 1e6,
        "peak_rss_mib": peak_rss_mib(),
        "rss_at_start_mib": rss_before,
    }
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
