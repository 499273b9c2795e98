"""What a wake-up costs on this machine: the CPU time of a short sleep, alone and with a
little work after it, against the same work run back to back.

A client that sends a few thousand requests a second wakes for each of them, and on a
virtual machine shared with brokers the caches are cold at every wake-up: a code path then
costs several times what a tight loop measures. This prints, per kind of wait and per piece
of work, the CPU microseconds per iteration (process time, medians of ``--rounds`` rounds
of ``--iterations`` each, rounds interleaved):

    python benchmarks/wakeup_cost.py
    python benchmarks/wakeup_cost.py --rounds 5 --iterations 2000

No cluster is needed. "hot" runs the work back to back; "after a 2 ms sleep" adds one
``time.sleep(0.002)`` before each piece of work: its figure minus "sleep alone" is what the
work costs when the wake-up left it cold.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import statistics
import sys
import time
from collections.abc import Callable

from aiokafka_lead.protocol.framing import decode_response, encode_request, encode_response
from aiokafka_lead.protocol.messages import ProduceResponse
from aiokafka_lead.protocol.produce_wire import ProduceWire

VERSION = 10
PAYLOAD = os.urandom(1100)


def _pieces() -> dict[str, Callable[[], object]]:
    """One Produce request's encoding and its answer's decoding, generated and C."""
    wire = ProduceWire(None, -1, 30_000, [("topic", [(3, PAYLOAD)])])
    request = wire.request()
    answer = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name="topic",
                partition_responses=[
                    ProduceResponse.PartitionProduceResponse(index=3, base_offset=100, log_append_time_ms=-1)
                ],
            )
        ]
    )
    frame = encode_response(answer, VERSION, 7)[4:]
    wire.frame(VERSION, 7, "client")
    return {
        "nothing": lambda: None,
        "Produce request, generated encoder": lambda: encode_request(request, VERSION, 7, "client"),
        "Produce request, ProduceWire": lambda: wire.frame(VERSION, 7, "client"),
        "Produce answer, generated decoder": lambda: decode_response(frame, ProduceResponse, VERSION),
        "Produce answer, ProduceWire": lambda: wire.decode(frame),
    }


def _cpu_us(step: Callable[[], object], iterations: int) -> float:
    start = time.process_time()
    for _ in range(iterations):
        step()
    return (time.process_time() - start) / iterations * 1e6


def _asyncio_sleep_us(iterations: int) -> float:
    async def run() -> float:
        start = time.process_time()
        for _ in range(iterations):
            await asyncio.sleep(0.002)
        return (time.process_time() - start) / iterations * 1e6

    return asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=1500)
    args = parser.parse_args()
    poller = select.epoll()
    waits: dict[str, Callable[[int], float]] = {
        "time.sleep(0.002)": lambda n: _cpu_us(lambda: time.sleep(0.002), n),
        "epoll.poll(0.002)": lambda n: _cpu_us(lambda: poller.poll(0.002), n),
        "asyncio.sleep(0.002) in a loop": _asyncio_sleep_us,
    }
    pieces = _pieces()
    results: dict[str, list[float]] = {}
    for round_no in range(1, args.rounds + 1):
        print(f"round {round_no}/{args.rounds}", file=sys.stderr, flush=True)
        for name, wait in waits.items():
            results.setdefault(f"wait: {name}", []).append(wait(args.iterations))
        for name, piece in pieces.items():
            hot = _cpu_us(piece, args.iterations)
            results.setdefault(f"hot: {name}", []).append(hot)

            def cold(piece: Callable[[], object] = piece) -> None:
                time.sleep(0.002)
                piece()

            results.setdefault(f"after a 2 ms sleep: {name}", []).append(_cpu_us(cold, args.iterations))
    print(f"CPU µs per iteration, median of {args.rounds} rounds of {args.iterations} (min-max)")
    for name, values in results.items():
        print(f"  {name:60s} {statistics.median(values):8.1f} ({min(values):.1f}-{max(values):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
