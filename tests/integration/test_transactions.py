"""Transactions on the real 3-node cluster: read_committed semantics, zombie fencing,
interop with the Java client both ways, and the exactly-once copy example under chaos
(every leader moved 3 times, the transaction coordinator's broker killed and restarted),
checked by our read_committed consumer and by librdkafka's (confluent-kafka)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.errors import KafkaError, ProducerFencedError
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.chaos import ChaosOp, ChaosRunner, ChaosStep
from aiokafka_lead.testing.cluster import KafkaCluster
from tests.integration.conftest import unique
from tests.support.txn import read_committed
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
JAVA_COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"
#: records the chaos copy moves (~30 s of copying here)
COPY_RECORDS = int(os.environ.get("AIOKAFKA_LEAD_TXN_COPY_RECORDS", "100000"))
COPY_PARTITIONS = 5


async def make_topics(bootstrap: str, partitions: int, *names: str) -> None:
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics(
            [NewTopic(n, partitions, 3, topic_configs={"min.insync.replicas": "2"}) for n in names]
        )


FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"


async def probe_version(bootstrap: str) -> int:
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("probe")) as p:
        return int(p.metrics()["transaction_version"])


@pytest.fixture(params=[2, 1], ids=["tv2", "tv1"])
async def txn_version(request: pytest.FixtureRequest, kafka_cluster: Any) -> AsyncIterator[int]:
    """The cluster's transaction.version feature for one test (1: downgraded, then restored)."""
    version: int = request.param
    bootstrap = kafka_cluster.bootstrap()

    async def set_level(level: int) -> None:
        verb = "downgrade" if level < 2 else "upgrade"
        await anyio.to_thread.run_sync(
            lambda: kafka_cluster.run_tool(
                FEATURE_COMMAND,
                "--bootstrap-server",
                bootstrap,
                verb,
                "--feature",
                f"transaction.version={level}",
            )
        )
        with anyio.fail_after(60):
            await eventually(lambda: _is_version(bootstrap, level), interval=0.5)

    if version == 1:
        await set_level(1)
    try:
        yield version
    finally:
        if version == 1:
            await set_level(2)


async def _is_version(bootstrap: str, level: int) -> bool:
    return await probe_version(bootstrap) == level


def copier_command(bootstrap: str, src: str, dst: str, group: str, txn_id: str, *extra: str) -> list[str]:
    """The example's command line."""
    script = str(ROOT / "examples" / "transactional_copy.py")
    args = ["--bootstrap", bootstrap, "--source", src, "--dest", dst, "--group", group]
    return [sys.executable, script, *args, "--transactional-id", txn_id, *extra]


def values(got: dict[TopicPartition, list[Any]]) -> dict[int, list[bytes]]:
    return {tp.partition: [r.value for r in records] for tp, records in got.items()}


async def test_read_committed_on_the_real_cluster(kafka_cluster: Any, txn_version: int) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("txn")
    await make_topics(bootstrap, 2, topic)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with anyio.fail_after(120):
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("tx")) as producer:
            assert producer.metrics()["transaction_version"] == txn_version
            async with producer.transaction():
                for i in range(4):
                    await producer.send(topic, b"c%d" % i, partition=i % 2)
            await producer.begin_transaction()
            for i in range(4):
                await producer.send(topic, b"aborted", partition=i % 2)
            await producer.flush()  # the aborted records are in the log
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send(topic, b"last", partition=0)
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"open", partition=0)  # holds the LSO back
            async with (
                AIOKafkaConsumer(
                    bootstrap_servers=bootstrap,
                    isolation_level="read_committed",
                    auto_offset_reset="earliest",
                ) as committed,
                AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as uncommitted,
            ):
                committed.assign([tp0, tp1])
                uncommitted.assign([tp0, tp1])
                # partition 0: c0 c2 | COMMIT | aborted aborted | ABORT | last | COMMIT | open
                lso = (await committed.end_offsets([tp0]))[tp0]
                hw = (await uncommitted.end_offsets([tp0]))[tp0]
                assert (lso, hw) == (8, 9)
                got: list[bytes] = []
                while await committed.position(tp0) < lso:
                    got += [r.value for r in (await committed.getmany(tp0, timeout_ms=500)).get(tp0, [])]
                assert got == [b"c0", b"c2", b"last"]
                assert await committed.position(tp0) == 8  # past the markers, stopped at the LSO
                assert await committed.getmany(tp0, timeout_ms=500) == {}  # the open txn is withheld
                raw = []
                while await uncommitted.position(tp0) < hw:
                    raw += [r.value for r in (await uncommitted.getmany(tp0, timeout_ms=500)).get(tp0, [])]
                assert raw == [b"c0", b"c2", b"aborted", b"aborted", b"last", b"open"]  # no markers
                await producer.commit_transaction()
                record = await committed.getone(tp0)
                assert (record.value, record.offset) == (b"open", 8)
        assert values(await read_committed(bootstrap, [tp0, tp1])) == {
            0: [b"c0", b"c2", b"last", b"open"],
            1: [b"c1", b"c3"],
        }


async def test_zombie_fencing_on_the_real_cluster(kafka_cluster: Any, txn_version: int) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("fence")
    await make_topics(bootstrap, 1, topic)
    tp = TopicPartition(topic, 0)
    txn_id = unique("zombie")
    with anyio.fail_after(120):
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id) as zombie:
            assert zombie.metrics()["transaction_version"] == txn_version
            await zombie.begin_transaction()
            await zombie.send_and_wait(topic, b"zombie")
            async with AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id) as fresh:
                async with fresh.transaction():
                    await fresh.send(topic, b"fresh")
                with pytest.raises(Exception) as first:
                    await zombie.send_and_wait(topic, b"late")
                    await zombie.commit_transaction()
                print("zombie's first error:", repr(first.value))
                if zombie.metrics()["transaction_state"] != "fatal_error":
                    with pytest.raises(ProducerFencedError):
                        await zombie.abort_transaction()
                assert zombie.metrics()["transaction_state"] == "fatal_error"
                with pytest.raises(ProducerFencedError, match="failed fatally"):
                    await zombie.begin_transaction()
        assert values(await read_committed(bootstrap, [tp])) == {0: [b"fresh"]}


async def test_interop_with_the_java_client(kafka_cluster: Any) -> None:
    cluster = kafka_cluster
    bootstrap = cluster.bootstrap()
    ours, src, java_out = unique("ours"), unique("src"), unique("java-out")
    await make_topics(bootstrap, 1, ours, src, java_out)
    with anyio.fail_after(240):
        # ours -> Java: the console consumer (read_committed) sees exactly our committed records
        expected = []
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("tx")) as producer:
            for n in range(6):
                await producer.begin_transaction()
                batch = [b"t%d-r%d" % (n, i) for i in range(50)]
                for value in batch:
                    await producer.send(ours, value)
                if n % 2:
                    await producer.flush()
                    await producer.abort_transaction()
                else:
                    await producer.commit_transaction()
                    expected += batch
        out = await anyio.to_thread.run_sync(
            lambda: cluster.run_tool(
                CONSOLE_CONSUMER,
                "--bootstrap-server",
                bootstrap,
                "--topic",
                ours,
                "--from-beginning",
                "--isolation-level",
                "read_committed",
                "--max-messages",
                str(len(expected)),
                "--timeout-ms",
                "30000",
                timeout=120,
            )
        )
        assert [line.encode() for line in out.splitlines() if line] == expected

        # Java -> ours: Kafka's transactional copier with random aborts; we read its output
        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as plain:
            source = [b"v%05d" % i for i in range(3000)]
            for value in source:
                await plain.send(src, value)
        copier_out = await anyio.to_thread.run_sync(
            lambda: cluster.run_tool(
                JAVA_COPIER,
                "--broker-list",
                bootstrap,
                "--input-topic",
                src,
                "--input-partition",
                "0",
                "--output-topic",
                java_out,
                "--transactional-id",
                unique("java-tx"),
                "--consumer-group",
                unique("java-g"),
                "--transaction-size",
                "100",
                "--max-messages",
                str(len(source)),
                "--enable-random-aborts",
                "--use-group-metadata",
                timeout=180,
            )
        )
        tp = TopicPartition(java_out, 0)
        assert values(await read_committed(bootstrap, [tp])) == {0: source}
        async with AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as raw:
            raw.assign([tp])
            hw = (await raw.end_offsets([tp]))[tp]
        print(
            f"java copier: output log end {hw} for {len(source)} records; last status: "
            f"{copier_out.strip().splitlines()[-1] if copier_out.strip() else ''}"
        )
        assert hw > len(source)  # at least the commit markers are in the log


def confluent_read_committed(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[int, list[bytes]]:
    """librdkafka's read_committed view of ``topic`` up to ``ends`` (positions, not counts)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTP

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("librdkafka"),
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    out: dict[int, list[bytes]] = {p: [] for p in ends}
    try:
        consumer.assign([CTP(topic, p, 0) for p in ends])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            positions = consumer.position([CTP(topic, p) for p in ends])
            if all(tp.offset >= ends[tp.partition] for tp in positions if tp.offset >= 0) and all(
                tp.offset >= 0 for tp in positions
            ):
                break
            for message in consumer.consume(num_messages=5000, timeout=0.5):
                if message.error() is None:
                    out[message.partition()].append(message.value())
    finally:
        consumer.close()
    return out


async def test_transactional_copy_example_through_chaos(kafka_node_control: KafkaCluster) -> None:
    cluster = kafka_node_control
    bootstrap = cluster.bootstrap()
    src, dst, group, txn_id = unique("copy-src"), unique("copy-dst"), unique("copier"), unique("copier-tx")
    await make_topics(bootstrap, COPY_PARTITIONS, src, dst)
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        coordinator = await admin.find_coordinator(txn_id, 1)
    schedule: Sequence[ChaosStep] = (
        ChaosStep(ChaosOp.ROTATE_LEADERS),
        ChaosStep(ChaosOp.ROTATE_LEADERS),
        ChaosStep(ChaosOp.KILL_START, coordinator),
        ChaosStep(ChaosOp.ROTATE_LEADERS),
    )
    runner = ChaosRunner(cluster, [src, dst], schedule=schedule, pause_s=1.0)
    cmd = copier_command(bootstrap, src, dst, group, txn_id)
    per_partition = COPY_RECORDS // COPY_PARTITIONS
    source = {p: [b"p%d-%07d" % (p, i) for i in range(per_partition)] for p in range(COPY_PARTITIONS)}
    started = time.monotonic()
    with anyio.fail_after(400):
        async with await anyio.open_process(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
            stderr: list[bytes] = []

            async def drain() -> None:
                assert proc.stderr is not None
                async for chunk in proc.stderr:
                    stderr.append(chunk)

            async def feed() -> None:
                # spread over the chaos: 20 slices, one every second
                async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
                    for s in range(20):
                        lo, hi = per_partition * s // 20, per_partition * (s + 1) // 20
                        for p in range(COPY_PARTITIONS):
                            for value in source[p][lo:hi]:
                                await producer.send(src, value, partition=p)
                        await producer.flush()
                        await anyio.sleep(1.0)

            async with anyio.create_task_group() as tg:
                tg.start_soon(drain)
                async with anyio.create_task_group() as work:
                    work.start_soon(feed)
                    work.start_soon(runner.run)

                async def copied() -> bool:
                    async with AdminClient(bootstrap_servers=cluster.bootstrap()) as admin:
                        offsets = await admin.list_consumer_group_offsets(group)
                    return sum(om.offset for om in offsets.values()) >= per_partition * COPY_PARTITIONS

                await eventually(copied, interval=1.0)
                proc.send_signal(signal.SIGTERM)
                assert await proc.wait() == 0, b"".join(stderr).decode()[-3000:]
                tg.cancel_scope.cancel()
    elapsed = time.monotonic() - started
    expected = {p: [v.upper() for v in vs] for p, vs in source.items()}
    tps = [TopicPartition(dst, p) for p in range(COPY_PARTITIONS)]
    ours = values(await read_committed(bootstrap, tps))
    async with AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed") as c:
        ends = {tp.partition: off for tp, off in (await c.end_offsets(tps)).items()}
    theirs = await anyio.to_thread.run_sync(lambda: confluent_read_committed(bootstrap, dst, ends))
    log_tail = b"".join(stderr).decode().strip().splitlines()
    print(
        "\nTXN-COPY "
        + json.dumps(
            {
                "records": per_partition * COPY_PARTITIONS,
                "elapsed_s": round(elapsed, 1),
                "chaos": runner.report.summary(),
                "coordinator_killed": coordinator,
                "example_last_line": log_tail[-1] if log_tail else "",
            }
        )
    )
    for p in range(COPY_PARTITIONS):
        assert ours[p] == expected[p], f"ours, partition {p}: {len(ours[p])} vs {len(expected[p])}"
        assert theirs[p] == expected[p], f"librdkafka, partition {p}: {len(theirs[p])} vs {len(expected[p])}"
    assert runner.report.count(ChaosOp.ROTATE_LEADERS) == 3 and runner.report.count(ChaosOp.KILL_START) == 1


async def test_example_stopped_by_sigterm_and_restarted_copies_exactly_once(kafka_cluster: Any) -> None:
    """SIGTERM in the middle: the copier finishes its transaction and exits 0; started again,
    it resumes from the offsets committed with that transaction: nothing lost, nothing twice."""
    bootstrap = kafka_cluster.bootstrap()
    src, dst, group, txn_id = unique("sig-src"), unique("sig-dst"), unique("sig-g"), unique("sig-tx")
    await make_topics(bootstrap, 2, src, dst)
    source = {p: [b"s%d-%06d" % (p, i) for i in range(10_000)] for p in range(2)}
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        for p, vals in source.items():
            for value in vals:
                await producer.send(src, value, partition=p)
    cmd = copier_command(bootstrap, src, dst, group, txn_id, "--max-records", "500")

    async def committed() -> int:
        async with AdminClient(bootstrap_servers=bootstrap) as admin:
            return sum(om.offset for om in (await admin.list_consumer_group_offsets(group)).values())

    async def run_until(enough: int) -> str:
        async with await anyio.open_process(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
            await eventually(lambda: _at_least(committed, enough), interval=0.2)
            proc.send_signal(signal.SIGTERM)
            assert proc.stderr is not None
            err = b"".join([chunk async for chunk in proc.stderr]).decode()
            assert await proc.wait() == 0, err[-2000:]
            return err.strip().splitlines()[-1]

    with anyio.fail_after(180):
        first = await run_until(1)  # stopped in the middle of the copy
        stopped_at = await committed()
        second = await run_until(20_000)
    print(f"\nfirst run: {first!r} (committed {stopped_at}); second run: {second!r}")
    assert 0 < stopped_at < 20_000
    tps = [TopicPartition(dst, p) for p in range(2)]
    assert values(await read_committed(bootstrap, tps)) == {
        p: [v.upper() for v in vs] for p, vs in source.items()
    }


async def _at_least(count: Any, enough: int) -> bool:
    return bool(await count() >= enough)


async def test_back_to_back_transactions_are_never_refused_verification(kafka_cluster_1: Any) -> None:
    """A broker checks a partition's first produce of each transaction with the coordinator,
    one check per transactional id at a time; a second request needing a check on another
    connection fails the first with NOT_ENOUGH_REPLICAS ("Unable to verify the partition has
    been added to the transaction ... NETWORK_EXCEPTION") and a retry backoff. Measured before
    the fix: about one transaction in four of this load had such a retry (lanes.py)."""
    bootstrap = kafka_cluster_1.bootstrap()
    topic = unique("verify")
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 6, 1)])
    with anyio.fail_after(120):
        async with AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            transactional_id=unique("verify"),
            linger_ms=5,
            connections_per_broker=2,  # the second connection is where the overlap came from
        ) as producer:
            for _ in range(60):
                async with producer.transaction():
                    for _ in range(5000):
                        await producer.send(topic, b"x" * 100)
            m = producer.metrics()
    assert m["transactions_committed"] == 60 and m["records_sent"] == 300_000
    assert m["errors"] == {} and m["batches_retried"] == 0, m["errors"]


async def test_offsets_of_records_read_before_a_rebalance_are_fenced(kafka_cluster: Any) -> None:
    """A rebalance in the background between getmany() and the transaction's offsets takes
    the partition away and gives it back at the committed offset: group_metadata(), read
    right before send_offsets_to_transaction as Java's pattern does, is then the membership
    the records came with, so the coordinator rejects the commit and nothing is copied twice."""
    bootstrap = kafka_cluster.bootstrap()
    src, dst = unique("fence-src"), unique("fence-dst")
    await make_topics(bootstrap, 1, src, dst)
    tp, group = TopicPartition(src, 0), unique("fence-group")
    sent = [f"r{i}".encode() for i in range(10)]

    def member() -> AIOKafkaConsumer[bytes, bytes]:
        return AIOKafkaConsumer(
            src,
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
        )

    async def read_all(consumer: AIOKafkaConsumer[bytes, bytes]) -> list[bytes]:
        got: list[bytes] = []
        while len(got) < len(sent):
            for records in (await consumer.getmany(timeout_ms=200)).values():
                got.extend(r.value for r in records if r.value is not None)
        return got

    with anyio.fail_after(120):
        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as plain:
            for value in sent:
                await plain.send(src, value)
            await plain.flush()
        async with (
            AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("fence-copier")) as copier,
            member() as consumer,
        ):
            batch = await read_all(consumer)
            generation = consumer.group_metadata().generation_id
            coordinator = consumer.coordinator
            assert coordinator is not None
            async with member() as other:  # joins: the partition goes to one of the two
                joined = other.coordinator
                assert joined is not None
                await eventually(lambda: joined.in_group and coordinator.generation_id > generation)
            # the other member left: the partition is back, its position the committed one
            await eventually(
                lambda: coordinator.generation_id >= generation + 2 and consumer.assignment() == {tp}
            )
            with pytest.raises(KafkaError) as fenced:
                async with copier.transaction():
                    for value in batch:
                        await copier.send(dst, value)
                    await copier.send_offsets_to_transaction({tp: 10}, consumer.group_metadata())
            print("the stale commit's error:", repr(fenced.value))
            assert copier.metrics()["transaction_state"] == "ready"  # aborted, usable again
            again = await read_all(consumer)  # read from the committed offset (none) again
            assert again == sent
            async with copier.transaction():
                for value in again:
                    await copier.send(dst, value)
                await copier.send_offsets_to_transaction({tp: 10}, consumer.group_metadata())
            assert (await consumer.committed(tp)) == 10
    assert values(await read_committed(bootstrap, [TopicPartition(dst, 0)])) == {0: sent}
