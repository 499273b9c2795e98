"""The producer against the real 3-node KRaft cluster."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.testing.leaders import rotate_leadership
from tests.integration.conftest import unique
from tests.support.fetch import read_topic
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


async def flowing(handles: list[Any]) -> bool:
    return sum(1 for h in handles if h.done()) >= 200


async def test_continuous_acks_all_production_through_repeated_leader_moves(
    admin: AdminClient, kafka_cluster: Any
) -> None:
    """No error reaches the caller; every acknowledged record is stored exactly once; per-key
    order holds; the producer learned the moves from KIP-951 hints."""
    topic = unique("moves")
    await admin.create_topics([NewTopic(topic, 6, 3, topic_configs={"min.insync.replicas": "2"})])
    keys = [f"k{i}" for i in range(24)]
    handles: list[Any] = []
    rotations_done = anyio.Event()
    async with AIOKafkaProducer(
        bootstrap_servers=kafka_cluster.bootstrap(), acks="all", linger_ms=2
    ) as producer:

        async def produce() -> None:
            seq = 0
            while not rotations_done.is_set() or seq < 2000:
                for _ in range(10):
                    key = keys[seq % len(keys)]
                    handles.append(await producer.send(topic, f"{key}:{seq}".encode(), key=key.encode()))
                    seq += 1
                await anyio.sleep(0.005)  # pacing: ~2,000 records/s across the moves

        with anyio.fail_after(180):
            async with anyio.create_task_group() as tg:
                tg.start_soon(produce)
                await eventually(lambda: flowing(handles))  # records are flowing before the first move
                for _ in range(3):
                    await rotate_leadership(admin, [topic])
                rotations_done.set()
            results = [await h for h in handles]  # raises if any delivery failed
        metrics = producer.metrics()
    assert metrics["records_failed"] == 0
    assert metrics["leader_hints_applied"] > 0, metrics
    stored = await read_topic(kafka_cluster.bootstrap(), topic)
    values = [r.value for recs in stored.values() for r in recs]
    assert len(values) == len(results) == len(set(values))  # exactly once
    assert {(md.partition, md.offset) for md in results} == {
        (p, r.offset) for p, recs in stored.items() for r in recs
    }  # every acknowledged offset holds exactly the record acknowledged there
    by_key: dict[str, list[int]] = defaultdict(list)
    for recs in stored.values():
        for r in recs:
            key, seq = r.value.decode().split(":")  # type: ignore[union-attr]
            by_key[key].append(int(seq))
    for key, seqs in by_key.items():
        assert seqs == sorted(seqs), f"{key} out of order"


def console_consume(cluster: Any, topic: str, count: int) -> list[tuple[int, str, str, str]]:
    out = cluster.run_tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server", cluster.bootstrap(), "--topic", topic, "--from-beginning",
        "--max-messages", str(count), "--timeout-ms", "30000",
        "--property", "print.key=true", "--property", "print.headers=true", "--property", "print.offset=true",
    )  # fmt: skip
    rows = []
    for line in out.splitlines():
        m = re.match(r"Offset:(\d+)\t(.*?)\t(.*?)\t(.*)$", line)
        if m:
            rows.append((int(m.group(1)), m.group(2), m.group(3), m.group(4)))
    return rows


@pytest.mark.parametrize("codec", CODECS)
async def test_kafka_console_consumer_reads_what_we_produce(
    admin: AdminClient, kafka_cluster: Any, codec: str | None
) -> None:
    topic = unique(f"interop-{codec}")
    await admin.create_topics([NewTopic(topic, 1, 3)])
    async with AIOKafkaProducer(
        bootstrap_servers=kafka_cluster.bootstrap(), compression_type=codec, linger_ms=20
    ) as p:
        handles = [
            await p.send(topic, b"v0", key=b"k0", headers=[("h1", b"x"), ("h2", None)]),
            await p.send(topic, None, key=b"k1"),
            await p.send(topic, b"v2", key=None),
            await p.send(topic, b"v3" * 500, key=b"k3"),
        ]
        for h in handles:
            await h
    rows = await anyio.to_thread.run_sync(lambda: console_consume(kafka_cluster, topic, 4))
    assert rows == [
        (0, "h1:x,h2:null", "k0", "v0"),
        (1, "NO_HEADERS", "k1", "null"),
        (2, "NO_HEADERS", "null", "v2"),
        (3, "NO_HEADERS", "k3", "v3" * 500),
    ]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
async def test_we_read_what_kafkas_producer_writes(
    admin: AdminClient, kafka_cluster: Any, codec: str, tmp_path: Any
) -> None:
    topic = unique(f"java-{codec}")
    await admin.create_topics([NewTopic(topic, 1, 3)])
    config = tmp_path / "producer.properties"
    config.write_text(f"compression.type={codec}\nlinger.ms=50\n")
    args = ["--bootstrap-server", kafka_cluster.bootstrap(), "--topic", topic]
    args += ["--max-messages", "500", "--producer.config", str(config)]
    out = await anyio.to_thread.run_sync(
        lambda: kafka_cluster.run_tool("org.apache.kafka.tools.VerifiableProducer", *args)
    )
    acked = [json.loads(line) for line in out.splitlines() if '"producer_send_success"' in line]
    assert len(acked) == 500
    stored = await read_topic(kafka_cluster.bootstrap(), topic)
    assert [(r.offset, r.value) for r in stored[0]] == [(a["offset"], a["value"].encode()) for a in acked]
