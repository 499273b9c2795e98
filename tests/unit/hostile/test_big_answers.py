"""A Metadata answer far bigger than what the client uses (here 100,000 partitions of 100
topics, whatever was asked for): the client keeps only its topic, and the event loop is
never frozen by it (tests/support/loop_lag.py); and one topic of 300,000 partitions that the
client does use, read and merged without freezing it either. benchmarks/metadata_scale.py
runs the same with a million partitions and reports memory."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from aiokafka_lead.protocol.messages import MetadataResponse
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster, Rewrite
from tests.unit.hostile.harness import hostile_case, producer

TOPICS, PARTITIONS = 100, 1000
TOPIC_ID = uuid.UUID(int=0xAB)
PORT_MARK = 0x7A7A  # the broker's port in the prepared answer, patched to the fake's


def huge_answer(topic_id: uuid.UUID = TOPIC_ID, port: int = PORT_MARK, own_partitions: int = 1) -> bytes:
    part = MetadataResponse.MetadataResponsePartition
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=port)],
        cluster_id="fake-cluster",
        controller_id=1,
        topics=[
            MetadataResponse.MetadataResponseTopic(
                name="t" if i == 0 else f"other-{i}",
                topic_id=topic_id if i == 0 else uuid.UUID(int=i),
                partitions=[
                    part(partition_index=p, leader_id=1, leader_epoch=0, replica_nodes=[1], isr_nodes=[1])
                    for p in range(own_partitions if i == 0 else PARTITIONS)
                ],
            )
            for i in range(TOPICS if own_partitions == 1 else 1)
        ],
    ).encode(13)


@asynccontextmanager
async def answering(prepared: bytes) -> AsyncIterator[FakeCluster]:
    """A case whose broker answers every Metadata request with ``prepared``."""
    async with hostile_case() as fc:
        fc.topics["t"].topic_id = TOPIC_ID
        mark = b"127.0.0.1" + PORT_MARK.to_bytes(4, "big")
        body = prepared.replace(mark, b"127.0.0.1" + fc.address(1)[1].to_bytes(4, "big"), 1)

        def lie(response: Any, frame: bytes) -> bytes:
            payload = frame[4:8] + b"\x00" + body
            return len(payload).to_bytes(4, "big") + payload

        fc.intercept(3, lambda *_: Rewrite(lie), times=None)
        yield fc


async def test_a_huge_answer_keeps_the_clients_topic_only_and_the_loop_free() -> None:
    prepared = huge_answer()  # outside the case: building it is not the client's work
    async with answering(prepared) as fc:
        with anyio.fail_after(30):
            async with producer(
                fc, max_block_ms=20_000, request_timeout_ms=20_000, delivery_timeout_ms=40_000
            ) as p:
                assert (await p.send_and_wait("t", b"x")).offset == 0
                store = p._core.store
                assert store.topics() == {"t"}
                assert store.partitions_for_topic("t") == {0}


async def test_one_topic_of_300_000_partitions_in_use_leaves_the_loop_free() -> None:
    """Read, checked and merged in slices, partitions as plain rows (no object per partition
    for the garbage collector to walk): the case's rules fail it if the loop is held."""
    count = 300_000
    prepared = huge_answer(own_partitions=count)
    async with answering(prepared) as fc:
        with anyio.fail_after(60):
            async with producer(
                fc, max_block_ms=40_000, request_timeout_ms=40_000, delivery_timeout_ms=80_000
            ) as p:
                assert (await p.send_and_wait("t", b"x", partition=0)).offset == 0
                assert await p.partitions_for("t") == set(range(count))
                with pytest.raises(ValueError, match=f"has no partition {count} .*{count} of them"):
                    await p.send("t", b"x", partition=count)
                store = p._core.store
                assert store.available_partitions("t") == list(range(count))
                assert store.leader_epoch(TopicPartition("t", count - 1)) == 0
