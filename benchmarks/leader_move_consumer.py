"""One consumer of the leader-move benchmark's consumer comparison, in its own process.

Reads every partition of ``--topic`` from the beginning (before anything is produced)
while the orchestrator produces and moves leaders; every producer stamps each record with
its *scheduled* time, so a record's latency here runs from that time to its arrival, the
same correction as the producer table. Prints ``READY`` once positioned, stops after
``--expect`` records (or ``--idle`` seconds without one) and writes, per record,
partition, scheduled time and arrival time as JSON to ``--out``.

    python benchmarks/leader_move_consumer.py --client ours --bootstrap-server H:P --topic T \
        --partitions 24 --expect 130000 --out F
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

POLL_S = 0.1


class Received:
    def __init__(self, expect: int) -> None:
        self.expect = expect
        self.partition: list[int] = []
        self.scheduled_ms: list[int] = []
        self.arrived: list[float] = []

    def add(self, partition: int, timestamp_ms: int, now: float) -> None:
        self.partition.append(partition)
        self.scheduled_ms.append(timestamp_ms)
        self.arrived.append(now)

    @property
    def done(self) -> bool:
        return len(self.arrived) >= self.expect

    def to_json(self, client: str, extra: dict[str, Any]) -> dict[str, Any]:
        return {"client": client, "partition": self.partition, "scheduled_ms": self.scheduled_ms,
                "arrived": self.arrived, "extra": extra}  # fmt: skip


def ready() -> None:
    print("READY", flush=True)


async def run_asyncio(module_name: str, args: argparse.Namespace, got: Received) -> dict[str, Any]:
    """aiokafka_lead or aiokafka: the same API, the same loop."""
    module = __import__(module_name)
    consumer = module.AIOKafkaConsumer(bootstrap_servers=args.bootstrap_server, auto_offset_reset="earliest",
                                       enable_auto_commit=False, fetch_max_wait_ms=100)  # fmt: skip
    await consumer.start()
    try:
        tps = [module.TopicPartition(args.topic, p) for p in range(args.partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        for tp in tps:
            await consumer.position(tp)
        ready()
        idle_since = time.monotonic()
        while not got.done and time.monotonic() - idle_since < args.idle:
            batches = await consumer.getmany(timeout_ms=int(POLL_S * 1000))
            now = time.time()
            for tp, records in batches.items():
                for r in records:
                    got.add(tp.partition, r.timestamp, now)
            if batches:
                idle_since = time.monotonic()
    finally:
        await consumer.stop()
    return {"version": getattr(module, "__version__", "")}


def run_confluent(args: argparse.Namespace, got: Received) -> dict[str, Any]:
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": args.bootstrap_server, "group.id": f"lm-{time.time()}",
        "enable.auto.commit": False, "fetch.wait.max.ms": 100,
    })  # fmt: skip
    try:
        consumer.assign([
            confluent_kafka.TopicPartition(args.topic, p, confluent_kafka.OFFSET_BEGINNING)
            for p in range(args.partitions)
        ])  # fmt: skip
        ready()
        idle_since = time.monotonic()
        while not got.done and time.monotonic() - idle_since < args.idle:
            messages = consumer.consume(10000, POLL_S)
            now = time.time()
            for m in messages:
                if m.error() is None:
                    got.add(m.partition(), m.timestamp()[1], now)
            if messages:
                idle_since = time.monotonic()
    finally:
        consumer.close()
    return {"version": confluent_kafka.version()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--client", required=True, choices=["ours", "aiokafka", "confluent"])
    parser.add_argument("--label", required=True)
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--expect", type=int, required=True)
    parser.add_argument("--idle", type=float, default=60.0, help="give up after this long without a record")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    got = Received(args.expect)
    if args.client == "confluent":
        extra = run_confluent(args, got)
    else:
        module = "aiokafka" if args.client == "aiokafka" else "aiokafka_lead"
        extra = asyncio.run(run_asyncio(module, args, got))
    Path(args.out).write_text(json.dumps(got.to_json(args.label, extra)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
