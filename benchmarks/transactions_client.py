"""One client's run of the transactions benchmark, in its own process.

Produces ``--records`` records of ``--size`` bytes (no key) to ``--topic`` in transactions
of ``--per-txn`` records each (acks=all, idempotence, linger 5 ms: what transactions need,
the same for every client) and prints one ``RESULT <json>`` line: records/s over the whole
run (first send to the last commit's return) and every commit's latency (the
``commit_transaction`` call: flushing what is still queued, then EndTxn). ``PROGRESS <n>``
lines come about twice a second.

    python benchmarks/transactions_client.py --client ours --bootstrap-server H:P --topic T --per-txn 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from typing import Any

PROGRESS_EVERY_S = 0.5


class Run:
    def __init__(self) -> None:
        self.next_at = time.monotonic() + PROGRESS_EVERY_S
        self.commits_ms: list[float] = []
        self.started = 0.0
        self.cpu = 0.0

    def progress(self, done: int) -> None:
        now = time.monotonic()
        if now >= self.next_at:
            self.next_at = now + PROGRESS_EVERY_S
            print(f"PROGRESS {done}", flush=True)

    def start(self) -> None:
        self.started = time.perf_counter()
        self.cpu = time.process_time()

    def commit_timer(self) -> float:
        return time.perf_counter()

    def committed(self, since: float) -> None:
        self.commits_ms.append((time.perf_counter() - since) * 1000)


def batch_size_option(args: argparse.Namespace, name: str) -> dict[str, int]:
    return {} if args.batch_size is None else {name: args.batch_size}


def hold_to_version_1() -> None:
    """Benchmark-only: make our producer use transaction protocol version 1 (AddPartitionsToTxn,
    EndTxn v4, Produce v11) even where the cluster allows version 2, to compare the versions."""
    from aiokafka_lead.producer.txn_requests import TxnRequests

    async def version_1(self: TxnRequests) -> int:
        return 1

    TxnRequests.transaction_version = version_1  # type: ignore[method-assign]


async def run_ours(args: argparse.Namespace, payload: bytes, run: Run) -> None:
    from aiokafka_lead import AIOKafkaProducer

    async with AIOKafkaProducer(
        bootstrap_servers=args.bootstrap_server,
        transactional_id=args.transactional_id,
        linger_ms=5,
        **batch_size_option(args, "max_batch_size"),
    ) as producer:
        await producer.partitions_for(args.topic)
        run.start()
        for start in range(0, args.records, args.per_txn):
            await producer.begin_transaction()
            for _ in range(min(args.per_txn, args.records - start)):
                await producer.send(args.topic, payload)
            t = run.commit_timer()
            await producer.commit_transaction()
            run.committed(t)
            run.progress(start + args.per_txn)


async def run_aiokafka(args: argparse.Namespace, payload: bytes, run: Run) -> None:
    from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]

    producer = AIOKafkaProducer(
        bootstrap_servers=args.bootstrap_server,
        transactional_id=args.transactional_id,
        linger_ms=5,
        **batch_size_option(args, "max_batch_size"),
    )
    await producer.start()
    try:
        await producer.partitions_for(args.topic)
        run.start()
        for start in range(0, args.records, args.per_txn):
            await producer.begin_transaction()
            for _ in range(min(args.per_txn, args.records - start)):
                await producer.send(args.topic, payload)
            t = run.commit_timer()
            await producer.commit_transaction()
            run.committed(t)
            run.progress(start + args.per_txn)
    finally:
        await producer.stop()


def run_confluent(args: argparse.Namespace, payload: bytes, run: Run) -> None:
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": args.bootstrap_server,
            "transactional.id": args.transactional_id,
            "linger.ms": 5,
            **batch_size_option(args, "batch.size"),
        }
    )
    producer.init_transactions(60)
    producer.list_topics(args.topic, timeout=30)
    failed = 0

    def delivered(err: Any, _msg: Any) -> None:
        nonlocal failed
        if err is not None:
            failed += 1

    run.start()
    for start in range(0, args.records, args.per_txn):
        producer.begin_transaction()
        for _ in range(min(args.per_txn, args.records - start)):
            while True:
                try:
                    producer.produce(args.topic, payload, on_delivery=delivered)
                    break
                except BufferError:  # the local queue is full: serve callbacks, then retry
                    producer.poll(0.01)
            producer.poll(0)
        t = run.commit_timer()
        producer.commit_transaction(60)
        run.committed(t)
        run.progress(start + args.per_txn)
    if failed:
        raise RuntimeError(f"confluent-kafka: {failed} records failed")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--client", required=True, choices=["ours", "ours-tv1", "aiokafka", "confluent"])
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--per-txn", type=int, required=True)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument(
        "--batch-size", type=int, help="the same batch size for every client (default: its own)"
    )
    parser.add_argument("--transactional-id", default=f"bench-{uuid.uuid4().hex[:8]}")
    args = parser.parse_args()
    payload = os.urandom(args.size)
    run = Run()
    if args.client == "ours-tv1":
        hold_to_version_1()
    if args.client == "confluent":
        run_confluent(args, payload, run)
    elif args.client == "aiokafka":
        asyncio.run(run_aiokafka(args, payload, run))
    else:
        asyncio.run(run_ours(args, payload, run))
    seconds = time.perf_counter() - run.started
    commits = sorted(run.commits_ms)
    result = {
        "client": args.client,
        "records": args.records,
        "per_txn": args.per_txn,
        "seconds": seconds,
        "records_per_s": args.records / seconds,
        "cpu_us_per_record": (time.process_time() - run.cpu) / args.records * 1e6,
        "transactions": len(commits),
        "commit_ms": commits,
    }
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
