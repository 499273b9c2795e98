"""``aiokafka-lead demo``: the README's main job.

Until the producer lands (issue 8 brings the hints-on/off leader-move comparison), it
starts a local 3-node KRaft cluster (or uses ``--bootstrap-server``), checks its health
with this client, rotates the leadership of a demo topic once (reorder replicas +
preferred election, KIP-455/KIP-460) and shows how long the move took as seen by this
client's metadata, then cleans up.
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
import uuid
from typing import Any

import anyio

from aiokafka_lead.admin import AIOKafkaAdminClient, NewTopic
from aiokafka_lead.testing.leaders import rotate_leadership

PARTITIONS = 6


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="the leader-move demo (starts a local cluster unless told otherwise)")
    p.add_argument("--bootstrap-server", help="use this cluster instead of starting a local one")
    p.add_argument("--command-config", "--admin.config", dest="admin_config")
    p.set_defaults(run=run)


def _say(message: str) -> None:
    print(message, flush=True)


def _leaders(topics: Any) -> dict[int, tuple[int, int, tuple[int, ...]]]:
    return {p.partition: (p.leader, p.leader_epoch, p.replicas) for t in topics for p in t.partitions}


async def demo_on(bootstrap: str, client_kwargs: dict[str, Any]) -> int:
    topic = f"aiokafka-lead-demo-{uuid.uuid4().hex[:8]}"
    async with AIOKafkaAdminClient(bootstrap_servers=bootstrap, **client_kwargs) as admin:
        cluster = await admin.describe_cluster()
        _say(
            f"cluster {cluster.cluster_id}: {len(cluster.brokers)} broker(s), "
            f"controller {cluster.controller_id}"
        )
        for b in cluster.brokers:
            _say(f"  node {b.node_id} at {b.host}:{b.port}")
        rf = min(3, len(cluster.brokers))
        await admin.create_topics([NewTopic(topic, PARTITIONS, rf)])
        try:
            before = _leaders(await admin.describe_topics([topic]))
            _say(f"\ntopic {topic}: {PARTITIONS} partitions, replication factor {rf}")
            if rf < 2:
                _say("one broker only: leadership cannot move; health check done")
                return 0
            _say("rotating every partition's leadership (reorder replicas + preferred election)...")
            started = time.monotonic()
            with anyio.fail_after(120):
                await rotate_leadership(admin, [topic])
            elapsed = time.monotonic() - started
            after = _leaders(await admin.describe_topics([topic]))
            _say(
                f"\n{'partition':>9}  {'leader before':>13}  {'epoch':>5}  {'leader after':>12}  {'epoch':>5}"
            )
            for p in sorted(after):
                _say(f"{p:>9}  {before[p][0]:>13}  {before[p][1]:>5}  {after[p][0]:>12}  {after[p][1]:>5}")
            _say(
                f"\nall {PARTITIONS} leaders moved in {elapsed * 1000:.0f} ms "
                "(as seen by this client's metadata)"
            )
            _say("the producer-side KIP-951 comparison (hints on vs off) arrives with the producer")
            return 0
        finally:
            await admin.delete_topics([topic])


async def _local_cluster_demo(client_kwargs: dict[str, Any]) -> int:
    from aiokafka_lead.testing.cluster import KafkaCluster

    with tempfile.TemporaryDirectory(prefix="aiokafka-lead-demo-") as tmp:
        _say("starting a local 3-node Apache Kafka KRaft cluster (official jars from Maven Central)...")
        cluster = KafkaCluster(tmp, brokers=3)
        await anyio.to_thread.run_sync(cluster.up)
        try:
            bootstrap = cluster.bootstrap()
            _say(f"cluster up at {bootstrap}")
            quorum = await anyio.to_thread.run_sync(
                functools.partial(
                    cluster.run_tool,
                    "org.apache.kafka.tools.MetadataQuorumCommand",
                    "--bootstrap-server",
                    bootstrap,
                    "describe",
                    "--status",
                )
            )
            _say("KRaft quorum (Kafka's own MetadataQuorumCommand):")
            for line in quorum.splitlines():
                if line.split(":", 1)[0].strip() in (
                    "LeaderId",
                    "LeaderEpoch",
                    "HighWatermark",
                    "CurrentVoters",
                ):
                    _say(f"  {line.strip()}")
            return await demo_on(bootstrap, client_kwargs)
        finally:
            _say("stopping the cluster...")
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(cluster.down)


async def run(args: argparse.Namespace, client_kwargs: dict[str, Any]) -> int:
    if args.bootstrap_server:
        return await demo_on(args.bootstrap_server, client_kwargs)
    return await _local_cluster_demo(client_kwargs)
