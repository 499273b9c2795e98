"""MESSAGE_TOO_LARGE: a refused batch is split and sent again, a single record over
the broker's limit fails alone; on the fake cluster, whose topics take ``max_message_bytes``."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.errors import MessageSizeTooLargeError
from aiokafka_lead.testing.fake import FakeCluster

DEADLINE = 10.0
PRODUCE = 0


def log_values(fc: FakeCluster) -> list[bytes]:
    return [r[2] for r in fc.records(("t", 0))]


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "plain"])
@pytest.mark.parametrize("compression", [None, "gzip"])
async def test_a_refused_batch_is_split_until_it_fits_and_keeps_its_order(
    idempotent: bool, compression: str | None
) -> None:
    # ~0.5 KiB each, incompressible: gzip cannot make the batch fit on its own
    values = [f"{i:04d}".encode() + random.Random(i).randbytes(512) for i in range(40)]
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1, max_message_bytes=3000)
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap,
                linger_ms=1000,  # everything goes into one ~21 KB batch (max_batch_size 64 KiB)
                max_batch_size=65536,
                enable_idempotence=idempotent,
                acks="all" if idempotent else 1,
                compression_type=compression,
            ) as producer:
                handles = [await producer.send("t", v, partition=0) for v in values]
                await producer.flush()
                offsets = [(await h).offset for h in handles]
                metrics = producer.metrics()
            assert log_values(fc) == values  # everything, once, in order
            assert offsets == list(range(len(values)))
            assert metrics["batches_split"] >= 3  # 21 KB -> halves ... -> parts under 3000 bytes
            assert metrics["batches_retried"] == 0  # a split is not a retry
            assert metrics["records_sent"] == len(values)
            refused = fc.requests.select(api_key=PRODUCE)
            assert len(refused) > metrics["batches_split"]


async def test_a_single_record_over_the_limit_fails_alone_and_the_rest_is_delivered() -> None:
    """Idempotent: the refused record's sequence is given back, so the next part is in order."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1, max_message_bytes=1000)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, linger_ms=1000) as producer:
                small1 = await producer.send("t", b"a" * 100, partition=0)
                big = await producer.send("t", b"B" * 1500, partition=0)
                small2 = await producer.send("t", b"c" * 100, partition=0)
                await producer.flush()
                assert (await small1).offset == 0
                assert (await small2).offset == 1
                with pytest.raises(
                    MessageSizeTooLargeError, match=r"t-0 accepts .*max\.message\.bytes"
                ) as info:
                    await big
                assert "nothing else was affected" in str(info.value)
                # the producer goes on: a later record is delivered with the next offset
                assert (await producer.send_and_wait("t", b"d", partition=0)).offset == 2
                metrics = producer.metrics()
            assert log_values(fc) == [b"a" * 100, b"c" * 100, b"d"]
            assert metrics["records_failed"] == 1
            assert metrics["epoch_bumps"] == 0  # no OUT_OF_ORDER_SEQUENCE_NUMBER on the way


async def test_split_records_keep_their_callbacks_and_waiters() -> None:
    seen: list[Any] = []
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1, max_message_bytes=600)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, linger_ms=200) as producer:
                handles = [await producer.send("t", bytes([i]) * 200, partition=0) for i in range(6)]
                for h in handles:
                    h.add_done_callback(lambda done: seen.append(done.result().offset))
                async with anyio.create_task_group() as tg:
                    for h in handles:
                        tg.start_soon(h.wait)  # waiting on the original batch when it is split
                assert sorted(seen) == list(range(6))
                assert producer.metrics()["batches_split"] >= 1
