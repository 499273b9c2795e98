"""Smoke test: examples/consumer_worker.py against the real cluster, stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.structs import TopicPartition
from tests.integration.conftest import unique
from tests.integration.test_consumer import RawProducer

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
    output = ""
    async with await anyio.open_process(command, env=env, stderr=subprocess.STDOUT) as proc:
        assert proc.stdout is not None
        try:
            with anyio.fail_after(60):
                async for chunk in TextReceiveStream(proc.stdout):
                    output += chunk
                    processed = [
                        line.split()[1] for line in output.splitlines() if line.startswith("processed")
                    ]
                    if len(processed) >= 20:
                        break
            proc.send_signal(signal.SIGTERM)
            with anyio.fail_after(30):
                async for chunk in TextReceiveStream(proc.stdout):
                    output += chunk
                await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
    err = output
    assert proc.returncode == 0, err
    assert "worker stopped" in output
    assert sorted(processed) == sorted(f"{topic}-{p}@{o}" for p in range(2) for o in range(10))
    committed = await admin.list_consumer_group_offsets(group)
    assert {tp: committed[tp].offset for tp in tps} == {tp: 10 for tp in tps}
    [described] = await admin.describe_consumer_groups([group])
    assert described.members == ()  # it left the group (no wait for a session timeout)
    await admin.delete_topics([topic])
