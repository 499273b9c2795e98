"""A paced produce load for aiokafka_lead: fixed rate, per-record latency from send to ack."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import anyio

from aiokafka_lead.bench.stats import Samples
from aiokafka_lead.producer import AIOKafkaProducer, DeliveryHandle

TICK_S = 0.002


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
    """Send ``rate`` records/s of ``record_size`` bytes for ``duration_s``; fill ``samples``."""
    payload = os.urandom(record_size)
    total = int(rate * duration_s)
    started = time.monotonic()
    sent = 0
    last_report = started
    while sent < total:
        now = time.monotonic()
        due = min(total, int((now - started) * rate) + 1)
        while sent < due:
            index = len(samples.sent_at)
            samples.sent_at.append(time.time())
            samples.latency_ms.append(None)
            handle = await producer.send(topic, payload, key=str(sent).encode())
            handle.add_done_callback(_recorder(samples, index))
            sent += 1
        if progress is not None and now - last_report >= 1.0:
            progress((now - started) / duration_s)
            last_report = now
        await anyio.sleep(TICK_S)
    await producer.flush()


def _recorder(samples: Samples, index: int) -> Callable[[DeliveryHandle], Any]:
    def record(handle: DeliveryHandle) -> None:
        if handle.exception() is None:
            samples.latency_ms[index] = (time.time() - samples.sent_at[index]) * 1000

    return record
