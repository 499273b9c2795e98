"""The share-group benchmark: records/s of a share group, aiokafka_lead against Java's
KafkaShareConsumer and confluent-kafka's preview ShareConsumer.

Per partition count (``--partitions``, default 1 and 12), client, member count
(``--members``, default 1, 4, 8) and run: a fresh topic and share group
(``share.auto.offset.reset=earliest``); the member processes start (implicit
acknowledgement) and, once the group shows all of them with an assignment, one producer
writes ``--records`` records of ``--size`` bytes as fast as it can. The rate is the records
the members got together divided by the time from the first record any of them got to the
last one, so it can never exceed the producer's rate (printed with each run). Medians
(min-max) of ``--runs`` runs; the client order rotates between runs. Brokers run the
share-test settings (``testing/share_cluster.py``: 1 s heartbeats, so members join fast).

    python benchmarks/share_groups.py                          # starts a local 1-node cluster
    python benchmarks/share_groups.py --records 2000 --members 1,2 --partitions 1 --runs 1
    python benchmarks/share_groups.py --bootstrap-server H:P --clients ours,java

Writes benchmarks/results/share_groups.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.admin.types import ConfigResource
from aiokafka_lead.bench import share_java
from aiokafka_lead.bench.children import peer_versions, run_child, say
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.share_cluster import SHARE_TEST_PROPERTIES

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CLIENT = ROOT / "benchmarks" / "share_groups_client.py"
LABELS = {
    "ours": "aiokafka_lead",
    "java": "Java KafkaShareConsumer",
    "confluent": "confluent-kafka (preview)",
}


async def fill(bootstrap: str, topic: str, partitions: int, records: int, size: int) -> float:
    """Produce the records; returns the producer's records/s."""
    value = b"x" * size
    started = time.monotonic()
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks=1) as producer:
        for i in range(records):
            await producer.send(topic, value, partition=i % partitions)
        await producer.flush()
    return records / (time.monotonic() - started)


async def all_assigned(admin: AdminClient, group: str, members: int) -> bool:
    try:
        [described] = await admin.describe_share_groups([group])
    except KafkaError:
        return False
    return len(described.members) == members and all(m.assignment for m in described.members)


async def member(
    kind: str, bootstrap: str, topic: str, group: str, args: argparse.Namespace
) -> dict[str, Any]:
    if kind == "java":
        cmd = share_java.command(
            args.classpath, bootstrap, topic, group, explicit=False, idle_ms=args.idle_ms, max_ms=args.max_ms
        )
        result = await anyio.run_process(cmd, check=True)
        for line in result.stdout.decode().splitlines():
            if line.startswith("WALL "):
                _, count, first, last = line.split()
                return {"count": int(count), "first": int(first) / 1000, "last": int(last) / 1000}
        raise RuntimeError(f"the Java member printed no result: {result.stderr.decode()[-2000:]}")
    cmd = [sys.executable, str(CLIENT), "--client", kind, "--bootstrap-server", bootstrap]
    cmd += ["--topic", topic, "--group", group, "--idle-ms", str(args.idle_ms), "--max-ms", str(args.max_ms)]
    return await run_child(cmd, limit_s=args.max_ms / 1000 + 60, on_progress=lambda _: None)


async def one_run(
    kind: str, members: int, partitions: int, bootstrap: str, args: argparse.Namespace
) -> dict[str, Any]:
    topic = f"share-bench-{uuid.uuid4().hex[:8]}"
    group = f"bench-{kind}-{uuid.uuid4().hex[:8]}"
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
        await admin.alter_configs([ConfigResource("group", group, {"share.auto.offset.reset": "earliest"})])
        results: list[dict[str, Any]] = []

        async def run_one() -> None:
            results.append(await member(kind, bootstrap, topic, group, args))

        async with anyio.create_task_group() as tg:
            for _ in range(members):
                tg.start_soon(run_one)
            with anyio.fail_after(90):
                while not await all_assigned(admin, group, members):  # noqa: ASYNC110 - asks the broker
                    await anyio.sleep(0.2)
            produce_rate = await fill(bootstrap, topic, partitions, args.records, args.size)
        await admin.delete_topics([topic])
    got = [r for r in results if r["count"]]
    count = sum(r["count"] for r in results)
    span = max(r["last"] for r in got) - min(r["first"] for r in got) if got else 0.0
    return {
        "records": count,
        "records_per_s": count / span if span > 0 else float("nan"),
        "members_with_records": len(got),
        "produce_records_per_s": produce_rate,
    }


async def main_async(args: argparse.Namespace) -> int:
    kinds = args.clients.split(",")
    if "java" in kinds:
        args.classpath = await anyio.to_thread.run_sync(share_java.build)
    if "confluent" in kinds:
        import confluent_kafka

        if not hasattr(confluent_kafka, "ShareConsumer"):
            say("confluent-kafka has no ShareConsumer here: leaving it out")
            kinds.remove("confluent")
    cluster = None
    bootstrap = args.bootstrap_server
    if bootstrap is None:
        cluster = KafkaCluster(
            tempfile.mkdtemp(prefix="share-bench-"),
            1,
            benchmark=True,
            extra_properties=dict(SHARE_TEST_PROPERTIES),
            stop_at_exit=True,
        )
        await anyio.to_thread.run_sync(lambda: cluster.up(timeout=180))
        bootstrap = cluster.bootstrap()
    rows: list[dict[str, Any]] = []
    try:
        for partitions in (int(p) for p in args.partitions.split(",")):
            for members in (int(m) for m in args.members.split(",")):
                runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
                for i in range(args.runs):
                    order = kinds[i % len(kinds) :] + kinds[: i % len(kinds)]
                    for kind in order:
                        run = await one_run(kind, members, partitions, bootstrap, args)
                        runs[kind].append(run)
                        say(
                            f"  {partitions:>2}p {members}m {LABELS[kind]:<26} run {i + 1}: "
                            f"{run['records_per_s']:>10,.0f} records/s ({run['records']:,} records, "
                            f"{run['members_with_records']} member(s) got some; "
                            f"produced at {run['produce_records_per_s']:,.0f}/s)"
                        )
                for kind, done in runs.items():
                    rates = [r["records_per_s"] for r in done]
                    rows.append(
                        {
                            "client": kind,
                            "partitions": partitions,
                            "members": members,
                            "median": statistics.median(rates),
                            "min": min(rates),
                            "max": max(rates),
                            "runs": done,
                        }
                    )
    finally:
        if cluster is not None:
            await anyio.to_thread.run_sync(cluster.down)
    say("")
    say(f"{'partitions':>10} {'members':>7}  {'client':<26} {'records/s median (min-max)':>30}")
    for row in rows:
        spread = f"{row['median']:,.0f} ({row['min']:,.0f}-{row['max']:,.0f})"
        say(f"{row['partitions']:>10} {row['members']:>7}  {LABELS[row['client']]:<26} {spread:>30}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = Path(args.output) if args.output else RESULTS / "share_groups.json"
    versions = peer_versions() if "confluent" in kinds else {}
    settings = {k: v for k, v in vars(args).items() if k != "classpath"}
    report = {"date": time.strftime("%Y-%m-%d"), "args": settings, "versions": versions, "rows": rows}
    out.write_text(json.dumps(report, indent=1))
    say(f"wrote {out}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap-server", help="an existing cluster (default: start a local 1-node one)")
    p.add_argument("--clients", default="ours,java,confluent")
    p.add_argument("--partitions", default="1,12")
    p.add_argument("--members", default="1,4,8")
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--idle-ms", type=int, default=2000, help="a member stops after this long without records")
    p.add_argument("--max-ms", type=int, default=120_000)
    p.add_argument("--output", help="result file (default benchmarks/results/share_groups.json)")
    args = p.parse_args()
    return anyio.run(main_async, args)


if __name__ == "__main__":
    sys.exit(main())
