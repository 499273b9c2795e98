"""The examples run as smoke tests against the real cluster."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic, OffsetSpec
from aiokafka_lead.structs import TopicPartition
from tests.integration.conftest import unique
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


async def total_records(admin: AdminClient, topic: str, partitions: int) -> int:
    offsets = await admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.LATEST for p in range(partitions)}
    )
    return sum(i.offset for i in offsets.values())


async def test_producer_service_delivers_every_request(
    admin: AdminClient, kafka_cluster: Any
) -> None:
    topic = unique("orders")
    await admin.create_topics([NewTopic(topic, 3, 3)])
    cmd = [
        sys.executable,
        str(EXAMPLES / "producer_service.py"),
        "--bootstrap-server",
        kafka_cluster.bootstrap(),
    ]
    cmd += ["--topic", topic, "--requests", "3000"]
    done = await anyio.run_process(cmd, check=False)
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    assert "accepted 3000 delivered 3000 failed 0" in out
    assert await total_records(admin, topic, 3) == 3000


async def serving(admin: AdminClient, topic: str) -> bool:
    return await total_records(admin, topic, 3) >= 500


async def test_producer_service_sigterm_flushes_everything_accepted(
    admin: AdminClient, kafka_cluster: Any
) -> None:
    topic = unique("orders")
    await admin.create_topics([NewTopic(topic, 3, 3)])
    cmd = [
        sys.executable,
        str(EXAMPLES / "producer_service.py"),
        "--bootstrap-server",
        kafka_cluster.bootstrap(),
    ]
    cmd += ["--topic", topic, "--requests", "1000000", "--rate", "2000"]
    with anyio.fail_after(120):
        async with await anyio.open_process(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
            await eventually(lambda: serving(admin, topic))
            proc.send_signal(signal.SIGTERM)
            assert await proc.wait() == 0
            assert proc.stdout is not None
            out = (await proc.stdout.receive(65536)).decode()
    m = re.search(r"accepted (\d+) delivered (\d+) failed 0", out)
    assert m is not None, out
    assert m.group(1) == m.group(2)
    assert await total_records(admin, topic, 3) == int(m.group(2))
