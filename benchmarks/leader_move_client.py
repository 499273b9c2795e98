"""One client of the leader-move benchmark, in its own process.

Connects, warms up (unmeasured), prints ``GO <wall-clock time>`` so the orchestrator can
schedule the leader moves, then produces ``--rate`` records/s of ``--size`` bytes with
acks=all and linger 0 for ``--duration`` seconds, recording every record's latency from
its scheduled time (start + i / rate) to its acknowledgement and the time send()
blocked, and writes the samples as JSON to ``--out``.

    python benchmarks/leader_move_client.py --client aiokafka --bootstrap-server H:P --topic T --out F
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from aiokafka_lead.bench.load import TICK_S, Pacer, paced_async
from aiokafka_lead.bench.stats import Samples

#: the loads with no client behind them: what the load itself costs
NULL = ("null-asyncio", "null-sync")


def go() -> None:
    print(f"GO {time.time():.6f}", flush=True)


async def run_ours(
    args: argparse.Namespace, samples: Samples, *, hints: bool, connections: int, in_flight: int
) -> dict[str, Any]:
    from aiokafka_lead import AIOKafkaProducer
    from aiokafka_lead.bench.load import paced_produce

    async with AIOKafkaProducer(
        bootstrap_servers=args.bootstrap_server, acks="all", linger_ms=0, enable_leader_hints=hints,
        connections_per_broker=connections, max_in_flight_requests_per_connection=in_flight,
    ) as producer:
        await producer.partitions_for(args.topic)
        warm = Samples("warm-up")
        await paced_produce(
            producer, args.topic, rate=args.rate, duration_s=args.warmup, record_size=args.size, samples=warm
        )
        go()
        await paced_produce(
            producer,
            args.topic,
            rate=args.rate,
            duration_s=args.duration,
            record_size=args.size,
            samples=samples,
        )
        metrics = producer.metrics()
    return {"metadata_refreshes": metrics["metadata_refreshes"], "metrics": metrics}


async def run_aiokafka(args: argparse.Namespace, samples: Samples) -> dict[str, Any]:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=args.bootstrap_server, acks="all", linger_ms=0, enable_idempotence=True
    )
    await producer.start()
    payload = os.urandom(args.size)

    async def paced(target: Samples, duration: float) -> None:
        pacer = Pacer(target, rate=args.rate, duration_s=duration)

        async def send(index: int) -> None:
            fut = await producer.send(args.topic, payload, key=str(index).encode())
            fut.add_done_callback(
                lambda f: pacer.acked(index, not f.cancelled() and f.exception() is None)
            )

        await paced_async(pacer, send)
        await producer.flush()

    try:
        await paced(Samples("warm-up"), args.warmup)
        go()
        await paced(samples, args.duration)
    finally:
        await producer.stop()
    return {"version": __import__("aiokafka").__version__}


def run_confluent(args: argparse.Namespace, samples: Samples) -> dict[str, Any]:
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": args.bootstrap_server,
            "acks": "all",
            "linger.ms": 0,
            "enable.idempotence": True,
            "partitioner": "murmur2_random",  # the Java client's key hashing, like the others
        }
    )
    run_sync(args, samples, producer)
    return {"version": confluent_kafka.version()[0], "librdkafka": confluent_kafka.libversion()[0]}


def run_sync(args: argparse.Namespace, samples: Samples, producer: Any) -> None:
    """confluent-kafka's load: the schedule driven by ``produce()`` and ``poll()``."""
    payload = os.urandom(args.size)

    def paced(target: Samples, duration: float) -> None:
        pacer = Pacer(target, rate=args.rate, duration_s=duration)
        pacer.start()
        while not pacer.done:
            for index in pacer.due():
                began = time.monotonic()
                while True:
                    try:
                        producer.produce(
                            args.topic,
                            payload,
                            key=str(index).encode(),
                            on_delivery=lambda err, _msg, i=index: pacer.acked(i, err is None),
                        )
                        break
                    except BufferError:  # queue full: librdkafka's way of blocking
                        producer.poll(TICK_S)
                pacer.blocked(index, time.monotonic() - began)
            producer.poll(TICK_S)
        producer.flush(120)

    paced(Samples("warm-up"), args.warmup)
    go()
    paced(samples, args.duration)


class _NullSync:
    """No client: ``produce()`` keeps the delivery callback, the next ``poll()`` calls it and
    then sleeps its timeout, as librdkafka's poll does when nothing else arrives."""

    def __init__(self) -> None:
        self._due: list[Any] = []

    def produce(self, *_args: Any, on_delivery: Any, **_kwargs: Any) -> None:
        self._due.append(on_delivery)

    def poll(self, timeout: float) -> int:
        due, self._due = self._due, []
        for callback in due:
            callback(None, None)
        time.sleep(timeout)
        return len(due)

    def flush(self, _timeout: float) -> int:
        self.poll(0)
        return 0


class _NullHandle:
    """A record the null client acknowledged at once."""

    def add_done_callback(self, fn: Any) -> None:
        fn(self)

    def exception(self) -> None:
        return None


class _NullAsync:
    """No client: ``await send()`` returns a handle that is already acknowledged."""

    _handle = _NullHandle()

    async def send(self, *_args: Any, **_kwargs: Any) -> _NullHandle:
        return self._handle

    async def flush(self) -> None:
        return None


async def run_null_asyncio(args: argparse.Namespace, samples: Samples) -> dict[str, Any]:
    """ours' (and aiokafka's) load on asyncio, with no client behind it."""
    from aiokafka_lead.bench.load import paced_produce

    producer: Any = _NullAsync()
    kwargs = {"rate": args.rate, "record_size": args.size}
    await paced_produce(producer, args.topic, duration_s=args.warmup, samples=Samples("warm-up"), **kwargs)
    go()
    await paced_produce(producer, args.topic, duration_s=args.duration, samples=samples, **kwargs)
    return {}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--client",
        required=True,
        choices=["ours", "ours-nohints", "ours-2conn", "ours-1inflight", "aiokafka", "confluent", *NULL],
        help="null-asyncio / null-sync: the load alone, with no client (benchmarks/load_floor.py)",
    )
    parser.add_argument("--label", required=True)
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=5)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    samples = Samples(args.label)
    if args.client == "confluent":
        extra = run_confluent(args, samples)
    elif args.client == "null-sync":
        run_sync(args, samples, _NullSync())
        extra = {}
    elif args.client == "null-asyncio":
        extra = asyncio.run(run_null_asyncio(args, samples))
    elif args.client == "aiokafka":
        extra = asyncio.run(run_aiokafka(args, samples))
    else:
        hints, connections = args.client != "ours-nohints", 2 if args.client == "ours-2conn" else 1
        in_flight = 1 if args.client == "ours-1inflight" else 5
        extra = asyncio.run(
            run_ours(args, samples, hints=hints, connections=connections, in_flight=in_flight)
        )
    samples.extra = extra
    Path(args.out).write_text(json.dumps(samples.to_json()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
