"""One share-group member for benchmarks/share_groups.py (run as a child process).

    python benchmarks/share_groups_client.py --client ours|confluent --bootstrap-server H:P \
        --topic T --group G [--idle-ms 2000] [--max-ms 120000]

Joins the group, prints ``READY`` and waits for a line on stdin (the benchmark starts every
member at once), then consumes in implicit acknowledgement mode until ``--idle-ms`` pass
without records (after the first one) or ``--max-ms`` in all, closes, and prints
``RESULT {"count": n, "first": t0, "last": t1, "latency_ms": [...]}`` (wall-clock seconds
of the first and last record; per record, the wall-clock ms from its timestamp to its
delivery to this member).
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def barrier() -> None:
    print("READY", flush=True)
    sys.stdin.readline()


Result = tuple[int, float, float, list[int]]


def run_ours(args: argparse.Namespace) -> Result:
    import anyio
    import anyio.to_thread

    from aiokafka_lead.share import AIOKafkaShareConsumer

    async def main() -> Result:
        count, first, last = 0, 0.0, 0.0
        latency: list[int] = []
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
                    now_ms = int(now * 1000)
                    latency += [now_ms - r.timestamp for records in batch.values() for r in records]
                    first = first or now
                    last = now
                    count += n
        return count, first, last, latency

    return anyio.run(main)


def run_confluent(args: argparse.Namespace) -> Result:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": args.bootstrap_server, "group.id": args.group})
    consumer.subscribe([args.topic])
    barrier()
    count, first, last = 0, 0.0, 0.0
    latency: list[int] = []
    started = time.monotonic()
    try:
        while time.monotonic() - started < args.max_ms / 1000:
            if count and time.time() - last > args.idle_ms / 1000:
                break
            messages = [m for m in consumer.poll(0.1) or () if m.error() is None]
            n = len(messages)
            if n:
                now = time.time()
                now_ms = int(now * 1000)
                latency += [now_ms - m.timestamp()[1] for m in messages]
                first = first or now
                last = now
                count += n
    finally:
        consumer.close()
    return count, first, last, latency


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--client", choices=("ours", "confluent"), required=True)
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--idle-ms", type=int, default=2000)
    p.add_argument("--max-ms", type=int, default=120_000)
    args = p.parse_args()
    count, first, last, latency = (run_ours if args.client == "ours" else run_confluent)(args)
    result = {"count": count, "first": first, "last": last, "latency_ms": latency}
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
