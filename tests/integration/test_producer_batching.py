"""What the default producer sends on a real cluster: a guard on the batching rules.

A timed test would flake; counts do not. A producer with the defaults that matter in
production (acks=all, idempotence, linger 5 ms) sends 1 KiB records to a replicated topic
faster than three brokers on one machine can acknowledge them, so every partition builds a
backlog, and the backlog rule (DESIGN.md 23) promises batches well past ``max_batch_size``
once a partition's pipeline window is full. When a change keeps batches at
``max_batch_size`` (each request then carries ~15 records a partition, and the producer
ran 8.5x slower), the records per request fall far below that and this test fails."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.producer.accumulator import BACKLOG_FACTOR
from tests.integration.conftest import unique

pytestmark = pytest.mark.integration

RECORDS = 60_000  # 10,000 a partition, ~60 MiB: more than buffer_memory holds
VALUE = bytes(range(256)) * 4  # 1 KiB
PARTITIONS = 6
BATCH = 16_384  # max_batch_size's default
WINDOW = 5  # max_in_flight_requests_per_connection's default: batches kept at max_batch_size


async def test_a_default_producer_backlog_goes_out_in_grown_batches(
    admin: AdminClient, kafka_cluster: Any
) -> None:
    topic = unique("batching")
    await admin.create_topics([NewTopic(topic, PARTITIONS, 3, topic_configs={"min.insync.replicas": "2"})])
    with anyio.fail_after(120):
        # the defaults under test: acks=all with idempotence, max_batch_size 16 KiB
        async with AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap(), linger_ms=5) as producer:
            handles = [await producer.send(topic, VALUE, partition=i % PARTITIONS) for i in range(RECORDS)]
            await producer.flush()
            offsets = [(await h).offset for h in handles]
            m = producer.metrics()
    assert m["records_sent"] == RECORDS and m["records_failed"] == 0
    assert sorted(offsets) == sorted(o for p in range(PARTITIONS) for o in range(RECORDS // PARTITIONS))

    per_batch = BATCH // (len(VALUE) + 40)  # what a max_batch_size batch holds: 15
    # Per partition, the window's batches at max_batch_size, then batches that may grow to
    # BACKLOG_FACTOR times that (capped by max_request_size, 1 MiB by default: 64 x 16 KiB).
    per_partition = RECORDS // PARTITIONS
    promised_batches = WINDOW + -(-(per_partition - WINDOW * per_batch) // (BACKLOG_FACTOR * per_batch))
    records_per_batch = m["records_sent"] / m["batches_sent"]
    records_per_request = m["records_sent"] / m["produce_requests"]
    counts = (
        f"{m['produce_requests']} requests, {m['batches_sent']} batches, "
        f"{records_per_batch:.1f} records per batch, "
        f"{m['batches_sent'] / m['produce_requests']:.2f} batches per request, "
        f"{records_per_request:.1f} records per request (the rule promises at most "
        f"{promised_batches} batches a partition: ~{per_partition / promised_batches:.0f} records per batch)"
    )
    print(counts)
    # Timing decides how deep each backlog gets; the promise checked is the rule's order of
    # magnitude: batches on average ten times what max_batch_size holds (measured: ~670
    # records per batch and per request; with batches kept at max_batch_size 22 and 35).
    assert records_per_batch >= 10 * per_batch, counts
    assert records_per_request >= 10 * per_batch, counts
