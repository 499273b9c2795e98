"""What an operator sees while something stays wrong: one WARNING (rate-limited) when a
broker keeps failing or a partition stays without a leader, and timeout errors that say
why the records did not go."""

from __future__ import annotations

import logging

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.errors import KafkaTimeoutError
from aiokafka_lead.metadata import (
    BrokerNode,
    MetadataSnapshot,
    MetadataStore,
    PartitionMetadata,
    TopicMetadata,
)
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import Corrupt, FakeCluster
from tests.unit.consumer.util import consumer

PRODUCE, FETCH = 0, 1


def warnings_of(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and text in r.getMessage()]


def answer(leader: int) -> MetadataSnapshot:
    parts = (PartitionMetadata("t", 0, leader, 1), PartitionMetadata("t", 1, 1, 1))
    return MetadataSnapshot(
        brokers=(BrokerNode(1, "h", 9092),),
        topics=(TopicMetadata("t", rows=tuple(p.row for p in parts)),),
        source="Metadata v13 from x",
    )


def test_a_partition_that_stays_without_a_leader_is_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MetadataStore()
    with caplog.at_level(logging.WARNING):
        store.apply_metadata(answer(-1))
        assert warnings_of(caplog, "without a usable leader") == []  # a new topic's first answer
        for _ in range(10):
            store.apply_metadata(answer(-1))
        store.apply_metadata(answer(7))  # a leader the answer does not list: no better
        (warning,) = warnings_of(caplog, "without a usable leader")
        assert "topic 't': 1 partition(s) without a usable leader (0)" in warning
        store.apply_metadata(answer(1))  # elected: over
        store.apply_metadata(answer(-1))
        store.apply_metadata(answer(-1))
    assert len(warnings_of(caplog, "without a usable leader")) == 2


async def test_a_broker_that_cannot_be_reached_is_warned_about_once_and_named_in_the_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with FakeCluster(brokers=2) as fc:
        fc.create_topic("t", partitions=1, leaders=[2])
        with anyio.fail_after(10):
            async with AIOKafkaProducer(
                bootstrap_servers=f"127.0.0.1:{fc.address(1)[1]}",
                request_timeout_ms=500,
                delivery_timeout_ms=2000,
                retry_backoff_ms=20,
            ) as producer:
                await producer.partitions_for("t")
                await fc.stop_node(2)
                with caplog.at_level(logging.WARNING), pytest.raises(KafkaTimeoutError) as info:
                    await producer.send_and_wait("t", b"x")
    message = str(info.value)
    assert "not delivered within delivery_timeout_ms" in message
    assert "connect to node 2 (127.0.0.1:" in message
    warnings = warnings_of(caplog, "connect attempts in a row failed")
    assert len(warnings) == 1 and warnings[0].startswith("node 2 at 127.0.0.1:")


async def test_a_leader_that_keeps_sending_malformed_answers_is_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic("t", partitions=1)
        fc.intercept(PRODUCE, lambda *_: Corrupt(), times=None)
        fc.intercept(FETCH, lambda *_: Corrupt(), times=None)
        with anyio.fail_after(10), caplog.at_level(logging.WARNING):
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap,
                request_timeout_ms=500,
                delivery_timeout_ms=1500,
                retry_backoff_ms=20,
            ) as producer:
                with pytest.raises(KafkaTimeoutError, match="Produce v12 response from node 1"):
                    await producer.send_and_wait("t", b"x")
            async with consumer(fc, retry_backoff_ms=20) as c:
                c.assign([TopicPartition("t", 0)])
                with anyio.move_on_after(1.0):
                    while True:
                        await c.getmany(timeout_ms=100)
    assert len(warnings_of(caplog, "produce requests to node 1 keep failing")) == 1
    assert len(warnings_of(caplog, "fetches from node 1 keep failing")) == 1
