"""An undecodable Produce answer has the outcome of a cut connection (the broker may have
written the batch) and is handled like one, never reported as a plain failure the caller
would resend."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.testing.fake import Corrupt, FakeCluster, Truncate

PRODUCE = 0


async def outcome(fault: Any, **config: Any) -> tuple[int, list[Any]]:
    """(offset the send resolved with, values the partition holds) after one faulty answer."""
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic("t", partitions=1)
        with anyio.fail_after(10):
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, retry_backoff_ms=10, **config) as p:
                fc.intercept(PRODUCE, lambda *_: fault, times=1)
                metadata = await p.send_and_wait("t", b"v")
                return metadata.offset, [r[2] for r in fc.records(("t", 0))]


async def test_an_idempotent_producer_resends_and_the_broker_writes_once() -> None:
    assert await outcome(Corrupt()) == (0, [b"v"])


@pytest.mark.parametrize("fault", [Corrupt(), Truncate(10)], ids=["undecodable", "cut"])
async def test_without_idempotence_an_undecodable_answer_is_a_cut_connection(fault: Any) -> None:
    # the same outcome for both: resent, so written twice (what retries without idempotence risk)
    assert await outcome(fault, acks=1) == (1, [b"v", b"v"])
