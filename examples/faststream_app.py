"""A FastStream Kafka app running on aiokafka_lead, unchanged, through the aiokafka alias.

FastStream imports ``aiokafka`` and builds its producer and consumers itself; run it with
the alias installed first and they are aiokafka_lead's::

    KAFKA_BOOTSTRAP=localhost:9092 python -m aiokafka_lead.as_aiokafka examples/faststream_app.py

Two subscribers, one without a group and one in a group, both started before their topics
exist (the first metadata request creates them, where the brokers allow it). Once started,
the app publishes to each topic one message and a batch (``publish_batch``), waits until
both subscribers received what it published (``FASTSTREAM_APP_WAIT_S``, 60 s by default),
prints one JSON line per event, and exits; the grouped subscriber's positions are committed
as it stops. The exit status is 0 only if every message arrived.

Environment: ``KAFKA_BOOTSTRAP`` (``localhost:9092``), ``FASTSTREAM_PLAIN_TOPIC``,
``FASTSTREAM_GROUPED_TOPIC``, ``FASTSTREAM_GROUP`` (fresh names by default).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections import Counter
from typing import Any

import aiokafka
from faststream import FastStream
from faststream.kafka import KafkaBroker

RUN = uuid.uuid4().hex[:8]
BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")
PLAIN_TOPIC = os.environ.get("FASTSTREAM_PLAIN_TOPIC", f"faststream-plain-{RUN}")
GROUPED_TOPIC = os.environ.get("FASTSTREAM_GROUPED_TOPIC", f"faststream-grouped-{RUN}")
GROUP = os.environ.get("FASTSTREAM_GROUP", f"faststream-app-{RUN}")
WAIT_S = float(os.environ.get("FASTSTREAM_APP_WAIT_S", "60"))

# FastStream passes a string on as a one-item list: several servers go as a list
broker = KafkaBroker([server.strip() for server in BOOTSTRAP.split(",")])
app = FastStream(broker)

#: per subscriber: its topic, and what the app publishes there (one message, then a batch)
PUBLISHED = {
    name: (topic, f"{name}-single", [f"{name}-batch-{i}" for i in range(3)])
    for name, topic in (("plain", PLAIN_TOPIC), ("grouped", GROUPED_TOPIC))
}
received: dict[str, list[str]] = {name: [] for name in PUBLISHED}
everything_arrived = asyncio.Event()


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def expected(name: str) -> Counter[str]:
    _, single, batch = PUBLISHED[name]
    return Counter([single, *batch])


def record(name: str, body: str) -> None:
    received[name].append(body)
    emit("received", subscriber=name, body=body)
    if all(Counter(received[n]) >= expected(n) for n in PUBLISHED):
        everything_arrived.set()


# auto_offset_reset="earliest": each subscriber reads its new topic from the start
@broker.subscriber(PLAIN_TOPIC)  # FastStream's default: "latest", no group
async def plain(body: str) -> None:
    record("plain", body)


@broker.subscriber(GROUPED_TOPIC, group_id=GROUP, auto_offset_reset="earliest")
async def grouped(body: str) -> None:
    record("grouped", body)


@app.after_startup
async def publish_then_wait() -> None:
    emit("started", client=aiokafka.AIOKafkaProducer.__module__, topics=[PLAIN_TOPIC, GROUPED_TOPIC])
    for topic, single, batch in PUBLISHED.values():
        await broker.publish(single, topic=topic)
        await broker.publish_batch(*batch, topic=topic)  # the partitioner picks the partition
    emit("published", messages={name: sorted(expected(name).elements()) for name in PUBLISHED})
    try:
        await asyncio.wait_for(everything_arrived.wait(), WAIT_S)
    except TimeoutError:
        emit("timeout", waited_s=WAIT_S)
    app.exit()


def main() -> int:
    asyncio.run(app.run())
    missing = {n: sorted((expected(n) - Counter(received[n])).elements()) for n in PUBLISHED}
    emit("stopped", received=received, missing=missing)
    return 0 if not any(missing.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
