"""FastStream on aiokafka_lead through the aiokafka alias: examples/faststream_app.py runs in
a subprocess behind ``python -m aiokafka_lead.as_aiokafka`` (the alias never enters this
process, which imports the real aiokafka) against the real cluster.

The app's subscribers (one without a group, one in a group) start before their topics
exist, unless the test creates them first; the app publishes one message and a batch to
each and exits once both received them. Checked: each subscriber received exactly what
was published, the grouped one committed every record, and FastStream ran on our clients.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic, OffsetSpec
from aiokafka_lead.structs import TopicPartition
from tests.integration.conftest import unique

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "examples" / "faststream_app.py"
#: how long the app waits for its messages before giving up (it exits then, with status 1)
APP_WAIT_S = 40


async def run_app(
    bootstrap: str, plain: str, grouped: str, group: str
) -> tuple[int, list[dict[str, Any]], str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "KAFKA_BOOTSTRAP": bootstrap,
        "FASTSTREAM_PLAIN_TOPIC": plain,
        "FASTSTREAM_GROUPED_TOPIC": grouped,
        "FASTSTREAM_GROUP": group,
        "FASTSTREAM_APP_WAIT_S": str(APP_WAIT_S),
    }
    cmd = [sys.executable, "-m", "aiokafka_lead.as_aiokafka", str(APP)]
    with anyio.fail_after(APP_WAIT_S + 60):
        done = await anyio.run_process(cmd, cwd=ROOT, env=env, check=False)
    out = done.stdout.decode()
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return done.returncode, events, out + done.stderr.decode()


def only(events: list[dict[str, Any]], kind: str, output: str) -> dict[str, Any]:
    found = [e for e in events if e["event"] == kind]
    assert len(found) == 1, f"{kind}: {found}\n{output}"
    return found[0]


async def committed_and_end(
    admin: AdminClient, group: str, topic: str
) -> tuple[dict[int, int], dict[int, int]]:
    committed = await admin.list_consumer_group_offsets(group)
    parts = await admin.describe_topics([topic])
    tps = [TopicPartition(topic, p.partition) for p in parts[0].partitions]
    ends = await admin.list_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
    return (
        {tp.partition: om.offset for tp, om in committed.items() if tp.topic == topic},
        {tp.partition: info.offset for tp, info in ends.items()},
    )


@pytest.mark.parametrize("topics_exist", [False, True], ids=["topics-created-by-the-app", "topics-first"])
async def test_faststream_app_behind_the_alias(
    admin: AdminClient, kafka_cluster: Any, topics_exist: bool
) -> None:
    plain, grouped, group = unique("fs-plain"), unique("fs-grouped"), unique("fs-group")
    if topics_exist:
        await admin.create_topics([NewTopic(plain, 1, 3), NewTopic(grouped, 1, 3)])
    code, events, output = await run_app(kafka_cluster.bootstrap(), plain, grouped, group)

    # the app ran on our clients; this process still has the real aiokafka
    assert only(events, "started", output)["client"] == "aiokafka_lead.producer.producer"
    import aiokafka

    assert aiokafka.AIOKafkaProducer.__module__ == "aiokafka.producer.producer"

    published = only(events, "published", output)["messages"]
    assert published == {
        "plain": ["plain-batch-0", "plain-batch-1", "plain-batch-2", "plain-single"],
        "grouped": ["grouped-batch-0", "grouped-batch-1", "grouped-batch-2", "grouped-single"],
    }
    got = {
        name: [e["body"] for e in events if e["event"] == "received" and e["subscriber"] == name]
        for name in published
    }

    # the grouped subscriber: exactly what was published, and every record committed on stop
    assert Counter(got["grouped"]) == Counter(published["grouped"]), output
    committed, ends = await committed_and_end(admin, group, grouped)
    assert sum(ends.values()) == len(published["grouped"])
    assert committed == ends

    # FastStream's rebalance listener logged the member id (`_coordinator.member_id`) of the
    # grouped subscriber's consumer: "<client id>-<uuid>", Kafka's name for a classic member
    member = re.compile(r"Consumer \S+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12} assigned")
    assert any(member.search(line) and grouped in line for line in output.splitlines()), output

    # the subscriber without a group: exactly what was published
    assert Counter(got["plain"]) == Counter(published["plain"]), output
    assert code == 0, output
