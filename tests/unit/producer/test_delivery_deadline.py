"""delivery_timeout_ms bounds a send against a silent broker: the request in flight waits no
longer than the oldest batch's delivery deadline, and the error says what happened."""

from __future__ import annotations

import time

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.errors import KafkaTimeoutError
from aiokafka_lead.testing.fake import Drop, FakeCluster

PRODUCE = 0


async def test_a_silent_broker_fails_the_send_at_the_delivery_timeout() -> None:
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic("t", partitions=1)
        async with AIOKafkaProducer(
            bootstrap_servers=fc.bootstrap, delivery_timeout_ms=2000, request_timeout_ms=1500
        ) as producer:
            fc.intercept(PRODUCE, lambda *_: Drop(), times=None)
            started = time.monotonic()
            with anyio.fail_after(10), pytest.raises(KafkaTimeoutError) as info:
                await producer.send_and_wait("t", b"x")
            took = time.monotonic() - started
            # the second request would have waited a whole request timeout: ~3 s
            assert 1.9 < took < 2.5, took
            message = str(info.value)
            assert "not delivered within delivery_timeout_ms (2000 ms" in message
            assert "Produce v12 request to node 1" in message and "timed out" in message
