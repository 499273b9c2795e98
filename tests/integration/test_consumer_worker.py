"""Smoke test: examples/consumer_worker.py against the real cluster, stopped by SIGTERM."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.structs import TopicPartition
from tests.integration.conftest import unique
from tests.integration.test_consumer import RawProducer
from tests.support.scripts import running

pytestmark = pytest.mark.integration

WORKER = Path(__file__).resolve().parents[2] / "examples" / "consumer_worker.py"


async def test_worker_processes_commits_and_leaves_on_sigterm(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic, group = unique("work"), unique("workers")
    await admin.create_topics([NewTopic(topic, 2, 3)])
    tps = [TopicPartition(topic, p) for p in range(2)]
    async with RawProducer(bootstrap, [topic]) as producer:
        for tp in tps:
            await producer.send(tp, [b"job"] * 10)
    env = {**os.environ, "PYTHONPATH": str(WORKER.parents[1])}
    command = [sys.executable, str(WORKER), "--bootstrap", bootstrap, "--group", group, "--topic", topic]
    processed: list[str] = []

    def processed_all(output: str) -> bool:
        processed[:] = [line.split()[1] for line in output.splitlines() if line.startswith("processed")]
        return len(processed) >= 20

    async with running(command, env) as worker:
        with anyio.fail_after(60):
            await worker.until(processed_all)
        with anyio.fail_after(30):
            code = await worker.terminate()
    output = worker.output
    assert code == 0, output
    assert "worker stopped" in output
    assert sorted(processed) == sorted(f"{topic}-{p}@{o}" for p in range(2) for o in range(10))
    committed = await admin.list_consumer_group_offsets(group)
    assert {tp: committed[tp].offset for tp in tps} == {tp: 10 for tp in tps}
    [described] = await admin.describe_consumer_groups([group])
    assert described.members == ()  # it left the group (no wait for a session timeout)
    await admin.delete_topics([topic])
