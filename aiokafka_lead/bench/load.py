"""Paced produce loads, measured from each record's scheduled time.

``Pacer`` is the one schedule every client of the comparison follows (the Java client in
benchmarks/java/ does the same arithmetic): record ``i`` is due at ``start + i / rate``;
every record due is handed to the client at each tick; the time ``send()`` blocked and the
latency from the scheduled time to the acknowledgement are written into ``Samples``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable

import anyio

from aiokafka_lead.bench.stats import Samples
from aiokafka_lead.producer import AIOKafkaProducer, DeliveryHandle
from aiokafka_lead.wakeup import asyncio_loop

TICK_S = 0.002
PROGRESS_EVERY_S = 1.0


class Pacer:
    """The schedule of one run: ``total`` records at ``rate`` per second."""

    def __init__(self, samples: Samples, *, rate: float, duration_s: float) -> None:
        self.samples = samples
        self.rate = rate
        self.total = int(rate * duration_s)
        self.duration_s = duration_s
        self.next = 0
        self._start_wall = 0.0
        self._start_mono = 0.0

    def start(self) -> None:
        self._start_wall = time.time()
        self._start_mono = time.monotonic()

    @property
    def done(self) -> bool:
        return self.next >= self.total

    def elapsed_fraction(self) -> float:
        return (time.monotonic() - self._start_mono) / self.duration_s

    def due(self) -> range:
        """Indices of the records due by now and not yet handed over (advances the schedule)."""
        upto = min(self.total, int((time.monotonic() - self._start_mono) * self.rate) + 1)
        first, self.next = self.next, max(self.next, upto)
        samples = self.samples
        for i in range(first, self.next):
            samples.scheduled_at.append(self._start_wall + i / self.rate)
            samples.latency_ms.append(None)
            samples.blocked_ms.append(0.0)
        return range(first, self.next)

    def blocked(self, index: int, seconds: float) -> None:
        self.samples.blocked_ms[index] = seconds * 1000

    def acked(self, index: int, ok: bool) -> None:
        if ok:
            samples = self.samples
            samples.latency_ms[index] = (time.time() - samples.scheduled_at[index]) * 1000


async def paced_async(
    pacer: Pacer,
    send: Callable[[int], Awaitable[None]],
    *,
    progress: Callable[[float], None] | None = None,
) -> None:
    """Drive an asyncio client: ``send(index)`` hands record ``index`` over (and arranges
    ``pacer.acked``); the time it takes is what the client blocked."""
    pacer.start()
    last_report = time.monotonic()
    # the load's own tick costs as little as the other clients' (anyio's sleep looks up the
    # backend every call); trio has no asyncio loop
    tick = asyncio.sleep if asyncio_loop() is not None else anyio.sleep
    while not pacer.done:
        for index in pacer.due():
            began = time.monotonic()
            await send(index)
            pacer.blocked(index, time.monotonic() - began)
        if progress is not None and time.monotonic() - last_report >= PROGRESS_EVERY_S:
            progress(pacer.elapsed_fraction())
            last_report = time.monotonic()
        await tick(TICK_S)


async def paced_produce(
    producer: AIOKafkaProducer,
    topic: str,
    *,
    rate: float,
    duration_s: float,
    record_size: int,
    samples: Samples,
    progress: Callable[[float], None] | None = None,
) -> None:
    """aiokafka_lead: ``rate`` records/s of ``record_size`` bytes for ``duration_s``."""
    payload = os.urandom(record_size)
    pacer = Pacer(samples, rate=rate, duration_s=duration_s)

    async def send(index: int) -> None:
        scheduled_ms = int(samples.scheduled_at[index] * 1000)  # the consumers measure from it
        handle = await producer.send(topic, payload, key=str(index).encode(), timestamp_ms=scheduled_ms)
        handle.add_done_callback(_recorder(pacer, index))

    await paced_async(pacer, send, progress=progress)
    await producer.flush()


def _recorder(pacer: Pacer, index: int) -> Callable[[DeliveryHandle], None]:
    def record(handle: DeliveryHandle) -> None:
        pacer.acked(index, handle.exception() is None)

    return record
