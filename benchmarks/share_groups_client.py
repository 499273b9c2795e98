"""One share-group member for benchmarks/share_groups.py (run as a child process).

    python benchmarks/share_groups_client.py --client ours|confluent --bootstrap-server H:P \
        --topic T --group G [--idle-ms 2000] [--max-ms 120000]

Joins the group, prints ``READY`` and waits for a line on stdin (the benchmark starts every
member at once), then consumes in implicit acknowledgement mode until ``--idle-ms`` pass
without records (after the first one) or ``--max-ms`` in all, closes, and prints
``RESULT {"count": n, "first": t0, "last": t1}`` (wall-clock seconds of the first and last
record).
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def barrier() -> None:
    print("READY", flush=True)
    sys.stdin.readline()


def run_ours(args: argparse.Namespace) -> tuple[int, float, float]:
    import anyio
    import anyio.to_thread

    from aiokafka_lead.share import AIOKafkaShareConsumer

    async def main() -> tuple[int, float, float]:
        count, first, last = 0, 0.0, 0.0
        started = time.monotonic()
        async with AIOKafkaShareConsumer(
            args.topic, group_id=args.group, bootstrap_servers=args.bootstrap_server
        ) as consumer:
            await anyio.to_thread.run_sync(barrier)
            started = time.monotonic()
            while time.monotonic() - started < args.max_ms / 1000:
                if count and time.time() - last > args.idle_ms / 1000:
                    break
                batch = await consumer.getmany(timeout_ms=100)
                n = sum(len(records) for records in batch.values())
                if n:
                    now = time.time()
                    first = first or now
                    last = now
                    count += n
        return count, first, last

    return anyio.run(main)


def run_confluent(args: argparse.Namespace) -> tuple[int, float, float]:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": args.bootstrap_server, "group.id": args.group})
    consumer.subscribe([args.topic])
    barrier()
    count, first, last = 0, 0.0, 0.0
    started = time.monotonic()
    try:
        while time.monotonic() - started < args.max_ms / 1000:
            if count and time.time() - last > args.idle_ms / 1000:
                break
            messages = consumer.poll(0.1)
            n = sum(1 for m in messages or () if m.error() is None)
            if n:
                now = time.time()
                first = first or now
                last = now
                count += n
    finally:
        consumer.close()
    return count, first, last


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--client", choices=("ours", "confluent"), required=True)
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--idle-ms", type=int, default=2000)
    p.add_argument("--max-ms", type=int, default=120_000)
    args = p.parse_args()
    count, first, last = (run_ours if args.client == "ours" else run_confluent)(args)
    print("RESULT " + json.dumps({"count": count, "first": first, "last": last}), flush=True)


if __name__ == "__main__":
    main()
