"""The service pattern: one long-lived producer shared by many concurrent request handlers.

Each handler awaits ``producer.send()`` (queued in memory, returns a delivery handle) and
then the handle (acknowledged by the brokers, acks="all"). On SIGTERM or SIGINT the
service stops accepting requests, lets the handlers in flight finish, and stops the
producer, which flushes: nothing accepted is lost.

    python examples/producer_service.py --bootstrap-server 127.0.0.1:9092 --requests 10000
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time

import anyio

from aiokafka_lead import AIOKafkaProducer


class OrderService:
    """A stand-in for a web service: ``handle`` is what a request handler would do."""

    def __init__(self, producer: AIOKafkaProducer, topic: str) -> None:
        self.producer = producer
        self.topic = topic
        self.accepted = 0
        self.delivered = 0
        self.failed = 0

    async def handle(self, order_id: int) -> None:
        self.accepted += 1
        customer = f"customer-{order_id % 100}"
        event = {"order_id": order_id, "customer": customer, "amount_cents": 100 + order_id % 900}
        try:
            handle = await self.producer.send(
                self.topic,
                json.dumps(event).encode(),
                key=customer.encode(),
                headers=[("source", b"example")],
            )
            await handle  # the brokers acknowledged it (acks="all")
            self.delivered += 1
        except Exception as exc:  # a real service would answer 503 here
            self.failed += 1
            print(f"order {order_id} not delivered: {exc!r}", file=sys.stderr)


async def main(args: argparse.Namespace) -> int:
    stop = anyio.Event()
    async with AIOKafkaProducer(bootstrap_servers=args.bootstrap_server, linger_ms=5) as producer:
        service = OrderService(producer, args.topic)
        started = time.monotonic()
        async with anyio.create_task_group() as tg:

            async def on_signal() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        print("shutting down: finishing requests in flight", flush=True)
                        stop.set()
                        return

            tg.start_soon(on_signal)
            print("ready", flush=True)
            limiter = anyio.CapacityLimiter(args.concurrency)

            async def request(order_id: int) -> None:
                async with limiter:
                    await service.handle(order_id)

            async with anyio.create_task_group() as handlers:
                for order_id in range(args.requests):
                    if stop.is_set():
                        break
                    await limiter.acquire_on_behalf_of(order_id)  # accept only what we can serve
                    limiter.release_on_behalf_of(order_id)
                    handlers.start_soon(request, order_id)
                    if args.rate:
                        await anyio.sleep(1 / args.rate)
            tg.cancel_scope.cancel()
        elapsed = time.monotonic() - started
    # leaving `async with` stopped the producer, flushing everything accepted
    print(
        f"accepted {service.accepted} delivered {service.delivered} failed {service.failed} "
        f"in {elapsed:.2f}s ({service.delivered / max(elapsed, 1e-9):.0f}/s)",
        flush=True,
    )
    return 0 if service.failed == 0 and service.delivered == service.accepted else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--rate", type=float, default=0, help="requests per second (0: as fast as possible)")
    sys.exit(anyio.run(main, parser.parse_args()))
