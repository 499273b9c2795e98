"""One group-rebalance measurement for one client and protocol (run by group_rebalance.py).

Three members of ``--client`` (ours: aiokafka_lead; confluent: confluent-kafka) share
``--topic`` while a producer writes to it; once they are stable and delivering, a fourth
member joins. The process prints one JSON object: when the fourth member was started, when
the assignment was stable again (four members, three partitions each, disjoint), and for
each of the three original members every time a poll returned records.

Variants (``--variant``): ``eager`` (classic, range), ``cooperative`` (classic,
cooperative-sticky), ``consumer`` (KIP-848, the broker's default assignor). Classic members
use a session timeout of 10 s and a heartbeat interval of 3 s in both clients;
consumer-protocol members take the broker's heartbeat interval.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio

POLL_S = 0.1
MEMBERS = 3


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Member:
    """What one member did: delivery times and its current assignment (set by its poller)."""

    def __init__(self) -> None:
        self.deliveries: list[float] = []
        self.assignment: frozenset[int] = frozenset()


def stable(members: list[Member], partitions: int) -> bool:
    each = partitions // len(members)
    owned = [m.assignment for m in members]
    union = frozenset().union(*owned)
    return all(len(a) == each for a in owned) and len(union) == partitions


async def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str) -> float:
    with anyio.fail_after(timeout_s):
        while not predicate():  # noqa: ASYNC110 - members update their state from other tasks
            await anyio.sleep(0.02)
    say(f"  {what}")
    return time.time()


async def scenario(
    start_member: Callable[[Member], Any], members: list[Member], args: argparse.Namespace
) -> dict[str, Any]:
    for m in members[:MEMBERS]:
        start_member(m)
    originals = members[:MEMBERS]
    await wait_until(lambda: stable(originals, args.partitions), 90, "3 members stable")
    await wait_until(
        lambda: all(m.deliveries and time.time() - m.deliveries[-1] < 0.5 for m in originals),
        60,
        "3 members delivering",
    )
    await anyio.sleep(args.warm)  # steady delivery before the join (the baseline)
    joined_at = time.time()
    start_member(members[MEMBERS])
    settled_at = await wait_until(lambda: stable(members, args.partitions), 120, "4 members stable")
    await anyio.sleep(args.after)
    return {
        "joined_at": joined_at,
        "settled_at": settled_at,
        "ended_at": time.time(),
        "deliveries": [m.deliveries for m in originals],
    }


async def run_ours(args: argparse.Namespace) -> dict[str, Any]:
    from aiokafka_lead import AIOKafkaConsumer

    members = [Member() for _ in range(MEMBERS + 1)]
    per_variant: dict[str, dict[str, Any]] = {
        "eager": {"partition_assignment_strategy": ["range"], "session_timeout_ms": 10_000},
        "cooperative": {
            "partition_assignment_strategy": ["cooperative-sticky"],
            "session_timeout_ms": 10_000,
        },
        "consumer": {"group_protocol": "consumer"},
    }
    options = per_variant[args.variant]
    async with anyio.create_task_group() as tg:

        async def run(m: Member) -> None:
            async with AIOKafkaConsumer(
                args.topic,
                bootstrap_servers=args.bootstrap_server,
                group_id=args.group,
                auto_offset_reset="latest",
                **options,
            ) as c:
                while True:
                    batch = await c.getmany(timeout_ms=POLL_S * 1000)
                    if batch:
                        m.deliveries.append(time.time())
                    m.assignment = frozenset(tp.partition for tp in c.assignment())

        result = await scenario(lambda m: tg.start_soon(run, m), members, args)
        tg.cancel_scope.cancel()
    return result


async def run_confluent(args: argparse.Namespace) -> dict[str, Any]:
    import confluent_kafka

    members = [Member() for _ in range(MEMBERS + 1)]
    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap_server,
        "group.id": args.group,
        "auto.offset.reset": "latest",
    }
    per_variant: dict[str, dict[str, Any]] = {
        "eager": {"partition.assignment.strategy": "range", "session.timeout.ms": 10_000},
        "cooperative": {
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 10_000,
        },
        "consumer": {"group.protocol": "consumer"},
    }
    config.update(per_variant[args.variant])
    if args.variant != "consumer":
        config["heartbeat.interval.ms"] = 3000
    stop = threading.Event()

    def run(m: Member) -> None:
        c = confluent_kafka.Consumer(config)
        try:
            c.subscribe([args.topic])
            while not stop.is_set():
                msgs = c.consume(500, POLL_S)
                if any(msg.error() is None for msg in msgs):
                    m.deliveries.append(time.time())
                m.assignment = frozenset(tp.partition for tp in c.assignment())
        finally:
            c.close()

    threads: list[threading.Thread] = []

    def start(m: Member) -> None:
        t = threading.Thread(target=run, args=(m,), daemon=True)
        t.start()
        threads.append(t)

    try:
        return await scenario(start, members, args)
    finally:
        stop.set()
        for t in threads:
            await anyio.to_thread.run_sync(t.join, 30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--client", choices=["ours", "confluent"], required=True)
    parser.add_argument("--variant", choices=["eager", "cooperative", "consumer"], required=True)
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--warm", type=float, default=3.0, help="seconds of steady delivery before the join")
    parser.add_argument("--after", type=float, default=3.0, help="seconds measured after settling")
    args = parser.parse_args()
    runner = run_ours if args.client == "ours" else run_confluent
    print(json.dumps(anyio.run(runner, args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
