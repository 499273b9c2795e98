"""Chaos tests: the producer and a consumer group under leader rotations, a
controlled shutdown, a SIGKILL and a restart on a new port, on the shared 3-node cluster.

The chaos schedule is fixed (``aiokafka_lead.testing.chaos.DEFAULT_SCHEDULE``); timing
varies. Each test prints one ``CHAOS {...}`` line with its numbers (run with ``-s``);
docs/chaos.md records measured runs. Whatever happens, the cluster is healed before the
test returns: other tests share it.
"""

from __future__ import annotations

import json
import resource
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.producer import lanes
from aiokafka_lead.producer.batch import DeliveryHandle
from aiokafka_lead.producer.partitioner import partition_for_key
from aiokafka_lead.runtime import ClientClosedError, ClientFailedError
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition
from aiokafka_lead.testing.chaos import ChaosRunner, StepRecord
from aiokafka_lead.testing.cluster import KafkaCluster
from tests.integration.conftest import unique
from tests.support.txn import read_committed
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

PARTITIONS = 12
KEYS_PER_PARTITION = 10
BUFFER_MEMORY = 32 << 20  # the producer's default, named here to check against
PAD = b"." * 64  # values of ~90 bytes: key, per-key sequence number, padding


def chaos_keys(partitions: int = PARTITIONS, per_partition: int = KEYS_PER_PARTITION) -> list[bytes]:
    """The first keys (``key-0``, ``key-1``, ...) that give every partition ``per_partition`` keys."""
    chosen: dict[int, list[bytes]] = defaultdict(list)
    i = 0
    while any(len(chosen[p]) < per_partition for p in range(partitions)):
        key = f"key-{i}".encode()
        p = partition_for_key(key, partitions)
        if len(chosen[p]) < per_partition:
            chosen[p].append(key)
        i += 1
    return [k for p in range(partitions) for k in chosen[p]]


def encode(key: bytes, seq: int) -> bytes:
    return key + b":" + str(seq).encode() + b":" + PAD


def decode(value: bytes) -> tuple[bytes, int]:
    key, seq, _ = value.split(b":", 2)
    return key, int(seq)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def report(name: str, numbers: dict[str, Any]) -> None:
    print(f"\nCHAOS {name} {json.dumps(numbers, sort_keys=True, default=str)}")


async def create_topic(bootstrap: str, topic: str) -> None:
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics(
            [NewTopic(topic, PARTITIONS, 3, topic_configs={"min.insync.replicas": "2"})]
        )


async def drop_topic(cluster: KafkaCluster, topic: str) -> None:
    """Best effort, bounded: a leftover topic is harmless, a hanging teardown is not."""
    with anyio.move_on_after(30, shield=True):
        try:
            async with AdminClient(bootstrap_servers=cluster.bootstrap()) as admin:
                await admin.delete_topics([topic])
        except KafkaError:
            pass


@dataclass
class Produced:
    """What the paced producer sent: (key index, per-key sequence, delivery handle) in send order."""

    keys: list[bytes]
    sends: list[tuple[int, int, DeliveryHandle]] = field(default_factory=list)
    peak_buffer: int = 0


async def produce_paced(
    producer: AIOKafkaProducer,
    topic: str,
    out: Produced,
    *,
    total: int,
    rate: float,
    warmed_up: anyio.Event,
    chaos_done: anyio.Event,
    tail: int,
) -> None:
    """``total`` keyed records, round-robin over the keys, at about ``rate`` per second.

    ``warmed_up`` is set after the first 5%; the last ``tail`` records wait for the chaos
    to end, so records are also written to the cluster as the chaos left it."""
    seqs = [0] * len(out.keys)
    t0 = time.monotonic()
    for n in range(total):
        if n == total // 20:
            warmed_up.set()
        if n == total - tail:
            await chaos_done.wait()
        k = n % len(out.keys)
        seq = seqs[k]
        seqs[k] += 1
        out.sends.append((k, seq, await producer.send(topic, encode(out.keys[k], seq), key=out.keys[k])))
        if n % 10_000 == 0:
            print(f"sent {n} records", flush=True)
        if n % 100 == 99:
            out.peak_buffer = max(out.peak_buffer, producer.metrics()["buffer_used"])
            ahead = t0 + (n + 1) / rate - time.monotonic()
            if ahead > 0:
                await anyio.sleep(ahead)  # pacing, not synchronisation


async def sample_buffer(producer: AIOKafkaProducer, out: Produced, done: anyio.Event) -> None:
    while not done.is_set():
        out.peak_buffer = max(out.peak_buffer, producer.metrics()["buffer_used"])
        with anyio.move_on_after(0.05):
            await done.wait()


async def read_all(bootstrap: str, topic: str) -> dict[tuple[int, int], tuple[bytes, int, bytes]]:
    """Every record of ``topic`` read with a fresh assign()-consumer from the earliest offset:
    (partition, offset) -> (key, leader epoch, value)."""
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    out: dict[tuple[int, int], tuple[bytes, int, bytes]] = {}
    async with AIOKafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    ) as consumer:
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        end = await consumer.end_offsets(tps)
        while not await reached(consumer, end):
            batch = await consumer.getmany(timeout_ms=1000)
            for tp, records in batch.items():
                for r in records:
                    assert (tp.partition, r.offset) not in out, f"{tp} offset {r.offset} returned twice"
                    assert r.key is not None and r.value is not None
                    out[(tp.partition, r.offset)] = (r.key, r.leader_epoch, r.value)
    return out


async def reached(consumer: AIOKafkaConsumer[Any, Any], end: dict[TopicPartition, int]) -> bool:
    for tp, offset in end.items():
        if await consumer.position(tp) < offset:
            return False
    return True


def per_key_order_violations(stored: dict[tuple[int, int], tuple[bytes, int, bytes]]) -> int:
    """Records whose per-key sequence number is not above the previous one of that key."""
    last: dict[bytes, int] = {}
    violations = 0
    for _, (key, _, value) in sorted(stored.items()):
        vkey, seq = decode(value)
        assert vkey == key
        if seq <= last.get(key, -1):
            violations += 1
        last[key] = max(seq, last.get(key, -1))
    return violations


async def run_with_chaos(runner: ChaosRunner, warmed_up: anyio.Event, chaos_done: anyio.Event) -> None:
    try:
        await warmed_up.wait()
        await runner.run()
    finally:
        chaos_done.set()


def log_step(record: StepRecord) -> None:
    print(f"chaos step {record.step} at {record.started_s:.1f}s took {record.duration_s:.1f}s", flush=True)


# --------------------------------------------------------------------------- producer


@pytest.fixture(params=["one-batch", "pipelined"])
def pipelining(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """"pipelined": every broker counts as far (``lanes.PIPELINE_FLOOR_S`` and
    ``lanes.ROUND_TRIP_FLOOR_S`` 0), so on this
    loopback cluster the producer keeps several batches of a partition in flight, as it
    does across a real network (DESIGN.md invariant 24); "one-batch" is loopback's own
    behaviour (pipelining may still start when a loaded machine slows every request)."""
    if request.param == "pipelined":
        monkeypatch.setattr(lanes, "PIPELINE_FLOOR_S", 0.0)
        monkeypatch.setattr(lanes, "ROUND_TRIP_FLOOR_S", 0.0)
        return True
    return False


async def test_idempotent_producer_through_chaos(kafka_node_control: KafkaCluster, pipelining: bool) -> None:
    """Every acknowledged record is in the log exactly once, at the offset acknowledged, in
    per-key order; every send resolved; the producer's buffer and the process stay bounded."""
    cluster = kafka_node_control
    total = 100_000
    topic = unique("chaos-produce")
    runner = ChaosRunner(cluster, [topic], on_step=log_step)
    produced = Produced(chaos_keys())
    rss_before = peak_rss_mib()
    started = time.monotonic()
    try:
        with anyio.fail_after(210):
            await create_topic(cluster.bootstrap(), topic)
            await runner.settle()  # a whole cluster to start from (an earlier test may have left it busy)
            warmed_up, chaos_done, finished = anyio.Event(), anyio.Event(), anyio.Event()
            async with AIOKafkaProducer(
                bootstrap_servers=cluster.bootstrap(), buffer_memory=BUFFER_MEMORY
            ) as producer:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run_with_chaos, runner, warmed_up, chaos_done)
                    tg.start_soon(sample_buffer, producer, produced, finished)
                    await produce_paced(
                        producer,
                        topic,
                        produced,
                        total=total,
                        rate=2_000,
                        warmed_up=warmed_up,
                        chaos_done=chaos_done,
                        tail=5_000,
                    )
                    await producer.flush()
                    finished.set()
                produce_s = time.monotonic() - started
                metrics = producer.metrics()
                pending = sum(1 for _, _, h in produced.sends if not h.done())
            errors: Counter[str] = Counter()
            acked: dict[bytes, tuple[int, int]] = {}
            failed_values: set[bytes] = set()
            for k, seq, handle in produced.sends:
                value = encode(produced.keys[k], seq)
                if not handle.done():
                    continue
                exc = handle.exception()
                if exc is None:
                    md = handle.result()
                    acked[value] = (md.partition, md.offset)
                else:
                    errors[type(exc).__name__] += 1
                    failed_values.add(value)
                    assert isinstance(exc, KafkaError), f"unclear delivery error: {exc!r}"
            stored = await read_all(cluster.bootstrap(), topic)
    finally:
        await runner.heal(timeout_s=120)
        await drop_topic(cluster, topic)

    values = Counter(v for _, _, v in stored.values())
    at = {(p, o): v for (p, o), (_, _, v) in stored.items()}
    lost = sum(1 for value, (p, o) in acked.items() if at.get((p, o)) != value)
    duplicated = sum(n - 1 for n in values.values() if n > 1)
    out_of_order = per_key_order_violations(stored)
    partitions_used = {p for p, _ in stored}
    numbers = {
        "records": total,
        "acknowledged": len(acked),
        "failed": sum(errors.values()),
        "failed_by_error": dict(errors),
        "failed_but_in_log": sum(1 for v in failed_values if v in values),
        "pending": pending,
        "in_log": len(stored),
        "lost": lost,
        "duplicated": duplicated,
        "out_of_order": out_of_order,
        "partitions_with_records": len(partitions_used),
        "peak_buffer_bytes": produced.peak_buffer,
        "peak_rss_mib_before": round(rss_before),
        "peak_rss_mib_after": round(peak_rss_mib()),
        "produce_s": round(produce_s, 1),
        "test_s": round(time.monotonic() - started, 1),
        "chaos": runner.report.summary(),
        "producer": {
            k: metrics[k]
            for k in (
                "batches_retried",
                "immediate_retries",
                "batches_expired",
                "errors",
                "leader_hints_applied",
                "leader_hints_ignored",
                "epoch_bumps",
                "produce_requests",
                "pipelined_batches",
            )
        },
    }
    report("producer-pipelined" if pipelining else "producer", numbers)
    assert pending == 0, numbers
    assert len(acked) + sum(errors.values()) == total, numbers
    assert lost == 0 and duplicated == 0 and out_of_order == 0, numbers
    assert partitions_used == set(range(PARTITIONS)), numbers
    assert len(runner.report.steps) == len(runner.schedule), numbers
    assert produced.peak_buffer <= BUFFER_MEMORY, numbers
    assert peak_rss_mib() - rss_before < 512, numbers  # 100k handles are kept: generous, but bounded
    assert metrics["pipelined_batches"] > 0 or not pipelining, numbers


async def transactional_writes(
    producer: AIOKafkaProducer,
    topic: str,
    keys: list[bytes],
    *,
    total: int,
    per_txn: int,
    rate: float,
    warmed_up: anyio.Event,
    chaos_done: anyio.Event,
    tail: int,
) -> Counter[str]:
    """Record ``n`` is key ``n % len(keys)`` with per-key sequence ``n // len(keys)``; every
    ``per_txn`` records are one transaction, aborted and written again until it commits."""
    aborts: Counter[str] = Counter()
    t0 = time.monotonic()
    for start in range(0, total, per_txn):
        if start >= total // 20:
            warmed_up.set()
        if start >= total - tail:
            await chaos_done.wait()
        for _ in range(20):
            try:
                async with producer.transaction():
                    for n in range(start, min(start + per_txn, total)):
                        key = keys[n % len(keys)]
                        await producer.send(topic, encode(key, n // len(keys)), key=key)
                break
            except KafkaError as exc:  # aborted by the context manager: write it again
                if producer.metrics()["transaction_state"] == "fatal_error":
                    raise
                aborts[type(exc).__name__] += 1
        else:
            raise AssertionError(f"transaction at record {start} aborted 20 times: {dict(aborts)}")
        if start % 10_000 == 0:
            print(f"committed {start + per_txn} records ({sum(aborts.values())} aborts)", flush=True)
        ahead = t0 + (start + per_txn) / rate - time.monotonic()
        if ahead > 0:
            await anyio.sleep(ahead)  # pacing, not synchronisation
    return aborts


async def test_transactional_producer_through_chaos(
    kafka_node_control: KafkaCluster, pipelining: bool
) -> None:
    """The read_committed view holds every committed record exactly once, in per-key order,
    and nothing of an aborted transaction, through the same chaos schedule."""
    cluster = kafka_node_control
    total, per_txn = 100_000, 500
    topic = unique("chaos-txn")
    runner = ChaosRunner(cluster, [topic], on_step=log_step)
    keys = chaos_keys()
    started = time.monotonic()
    try:
        with anyio.fail_after(240):
            await create_topic(cluster.bootstrap(), topic)
            await runner.settle()
            warmed_up, chaos_done = anyio.Event(), anyio.Event()
            # pipelined: small batches (1 KB, ~10 records; toward a pipelining node a backlog's
            # batches keep that size), so that a partition has several per transaction: its
            # first goes alone (the broker checks it with the coordinator), and the rest of a
            # 500-record transaction would otherwise fit in one
            sizes = {"max_batch_size": 1000} if pipelining else {}
            async with AIOKafkaProducer(
                bootstrap_servers=cluster.bootstrap(), transactional_id=unique("chaos-tx"), **sizes
            ) as producer:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run_with_chaos, runner, warmed_up, chaos_done)
                    aborts = await transactional_writes(
                        producer, topic, keys, total=total, per_txn=per_txn, rate=2_000,
                        warmed_up=warmed_up, chaos_done=chaos_done, tail=5_000,
                    )
                metrics = producer.metrics()
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            seen = await read_committed(cluster.bootstrap(), tps)
    finally:
        await runner.heal(timeout_s=120)
        await drop_topic(cluster, topic)
    expected = Counter(encode(keys[n % len(keys)], n // len(keys)) for n in range(total))
    got = Counter(r.value for records in seen.values() for r in records)
    stored = {
        (tp.partition, r.offset): (r.key, r.leader_epoch, r.value) for tp, rs in seen.items() for r in rs
    }
    numbers = {
        "records": total,
        "records_per_transaction": per_txn,
        "read_committed": sum(got.values()),
        "lost": sum(1 for v in expected if v not in got),
        "duplicated": sum(n - 1 for n in got.values() if n > 1),
        "unexpected": sum(1 for v in got if v not in expected),
        "out_of_order": per_key_order_violations(stored),
        "aborted_transactions": dict(aborts),
        "test_s": round(time.monotonic() - started, 1),
        "chaos": runner.report.summary(),
        "producer": {
            k: metrics[k]
            for k in (
                "transaction_version",
                "transactions_committed",
                "transactions_aborted",
                "commit_latency_ms_p50",
                "commit_latency_ms_p99",
                "transaction_coordinator_lookups",
                "transaction_retries",
                "batches_retried",
                "errors",
                "pipelined_batches",
            )
        },
    }
    report("transactional producer-pipelined" if pipelining else "transactional producer", numbers)
    assert numbers["lost"] == 0 and numbers["duplicated"] == 0 and numbers["unexpected"] == 0, numbers
    assert numbers["out_of_order"] == 0, numbers
    assert len(runner.report.steps) == len(runner.schedule), numbers
    assert metrics["pipelined_batches"] > 0 or not pipelining, numbers


# --------------------------------------------------------------------------- group


@dataclass
class GroupLedger:
    """What the members did. ``tick`` orders processing and commits across members."""

    tick: int = 0
    first_processed: dict[tuple[int, int], int] = field(default_factory=dict)
    processed: Counter[tuple[int, int]] = field(default_factory=Counter)
    # (partition, committed offset, tick when the commit was sent): successful commits only
    commits: list[tuple[int, int, int]] = field(default_factory=list)
    commit_errors: Counter[str] = field(default_factory=Counter)
    poll_errors: Counter[str] = field(default_factory=Counter)
    per_member: Counter[int] = field(default_factory=Counter)
    rejoins: int = 0

    def process(self, member: int, partition: int, offset: int) -> None:
        self.tick += 1
        self.first_processed.setdefault((partition, offset), self.tick)
        self.processed[(partition, offset)] += 1
        self.per_member[member] += 1


async def member(
    cluster: KafkaCluster,
    topic: str,
    group: str,
    index: int,
    ledger: GroupLedger,
    stop: anyio.Event,
    rejoin: dict[int, anyio.Event],
    group_protocol: str = "classic",
) -> None:
    """Process (record in the ledger), then commit what was processed; commit failures are
    counted. When ``rejoin[index]`` is set the member leaves the group and joins again with
    a new consumer (a rebalance on top of the cluster's chaos)."""
    while not stop.is_set():
        async with AIOKafkaConsumer(
            topic,
            bootstrap_servers=cluster.bootstrap(),
            group_id=group,
            client_id=f"chaos-member-{index}",
            group_protocol=group_protocol,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=500,
        ) as consumer:
            while not stop.is_set() and not rejoin[index].is_set():
                await consume_and_commit(consumer, index, ledger)
        if rejoin[index].is_set():
            rejoin[index] = anyio.Event()
            ledger.rejoins += 1


async def consume_and_commit(consumer: AIOKafkaConsumer[Any, Any], index: int, ledger: GroupLedger) -> None:
    try:
        batch = await consumer.getmany(timeout_ms=300)
    except (ClientClosedError, ClientFailedError):
        raise  # stopped, or its background tasks died (ClientFailedError names why)
    except KafkaError as exc:
        ledger.poll_errors[type(exc).__name__] += 1
        return
    if not batch:
        return
    offsets: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, records in batch.items():
        for r in records:
            ledger.process(index, tp.partition, r.offset)
        last = records[-1]
        offsets[tp] = OffsetAndMetadata(last.offset + 1, "", last.leader_epoch)
    sent_at = ledger.tick
    try:
        await consumer.commit(offsets)
    except KafkaError as exc:
        ledger.commit_errors[type(exc).__name__] += 1
        return
    ledger.commits.extend((tp.partition, o.offset, sent_at) for tp, o in offsets.items())


async def committed_offsets(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        offsets = await admin.list_consumer_group_offsets(group)
    return {tp.partition: o.offset for tp, o in offsets.items() if tp.topic == topic}


async def reread_from_committed(bootstrap: str, topic: str, group: str) -> dict[int, tuple[int, set[int]]]:
    """Per partition: the group's committed offset and the offsets a fresh member of the group
    reads from there to the end."""
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    out: dict[int, tuple[int, set[int]]] = {}
    async with AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest"
    ) as consumer:
        consumer.assign(tps)
        committed = await consumer.seek_to_committed(*tps)
        end = await consumer.end_offsets(tps)
        seen: dict[int, set[int]] = {p: set() for p in range(PARTITIONS)}
        while not await reached(consumer, end):
            for tp, records in (await consumer.getmany(timeout_ms=1000)).items():
                seen[tp.partition].update(r.offset for r in records)
        for tp in tps:
            out[tp.partition] = (committed.get(tp) or 0, seen[tp.partition])
    return out


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
async def test_consumer_group_manual_commits_through_chaos(
    kafka_node_control: KafkaCluster, group_protocol: str
) -> None:
    """Three members commit after processing while a producer writes and the cluster is
    disturbed: no successful commit ever covers an unprocessed record, and every record in
    the log is processed at least once. Run with both group protocols (KIP-848: "consumer")."""
    cluster = kafka_node_control
    total = 40_000
    topic = unique("chaos-group")
    group = unique("chaos-group")
    # After the controlled shutdown, the kill and the new-port restart, one member (0, 1,
    # then 2) leaves and rejoins: rebalances happen while the cluster is disturbed.
    rejoin = {i: anyio.Event() for i in range(3)}
    rejoin_after = {1: 0, 3: 1, 5: 2}  # step index -> member

    def on_step(record: StepRecord) -> None:
        log_step(record)
        who = rejoin_after.get(len(runner.report.steps) - 1)
        if who is not None:
            rejoin[who].set()

    runner = ChaosRunner(cluster, [topic, "__consumer_offsets"], rotate_topics=[topic], on_step=on_step)
    produced = Produced(chaos_keys())
    ledger = GroupLedger()
    started = time.monotonic()
    try:
        with anyio.fail_after(210):
            await create_topic(cluster.bootstrap(), topic)
            await runner.settle()
            warmed_up, chaos_done, stop = anyio.Event(), anyio.Event(), anyio.Event()
            async with anyio.create_task_group() as members:
                for i in range(3):
                    members.start_soon(member, cluster, topic, group, i, ledger, stop, rejoin, group_protocol)
                async with (
                    AIOKafkaProducer(bootstrap_servers=cluster.bootstrap()) as producer,
                    anyio.create_task_group() as tg,
                ):
                    tg.start_soon(run_with_chaos, runner, warmed_up, chaos_done)
                    await produce_paced(
                        producer,
                        topic,
                        produced,
                        total=total,
                        rate=800,
                        warmed_up=warmed_up,
                        chaos_done=chaos_done,
                        tail=2_000,
                    )
                    await producer.flush()
                produce_s = time.monotonic() - started
                async with AdminClient(bootstrap_servers=cluster.bootstrap()) as admin:
                    end = {
                        tp.partition: info.offset
                        for tp, info in (
                            await admin.list_offsets(
                                {TopicPartition(topic, p): -1 for p in range(PARTITIONS)}
                            )
                        ).items()
                    }

                async def caught_up() -> bool:
                    if any((p, o) not in ledger.first_processed for p in end for o in range(end[p])):
                        return False
                    return await committed_offsets(cluster.bootstrap(), topic, group) == end

                with anyio.fail_after(90):
                    await eventually(caught_up, interval=0.5)
                stop.set()
            stored = await read_all(cluster.bootstrap(), topic)
            reread = await reread_from_committed(cluster.bootstrap(), topic, group)
    finally:
        await runner.heal(timeout_s=120)
        await drop_topic(cluster, topic)

    offsets_in_log: dict[int, list[int]] = defaultdict(list)
    for p, o in sorted(stored):
        offsets_in_log[p].append(o)
    unprocessed = [po for po in stored if po not in ledger.first_processed]
    skips = [
        (p, committed, o)
        for p, committed, sent_at in ledger.commits
        for o in offsets_in_log[p]
        if o < committed and ledger.first_processed.get((p, o), sent_at + 1) > sent_at
    ]
    uncovered = [
        (p, o)
        for p, (committed, seen) in reread.items()
        for o in offsets_in_log[p]
        if not ((o < committed and (p, o) in ledger.first_processed) or (o >= committed and o in seen))
    ]
    acked = sum(1 for _, _, h in produced.sends if h.done() and h.exception() is None)
    numbers = {
        "records_sent": total,
        "acknowledged": acked,
        "in_log": len(stored),
        "processed_distinct": len(ledger.first_processed),
        "processed_total": sum(ledger.processed.values()),
        "reprocessed": sum(n - 1 for n in ledger.processed.values()),
        "per_member": dict(ledger.per_member),
        "member_rejoins": ledger.rejoins,
        "commits_ok": len(ledger.commits),
        "commit_errors": dict(ledger.commit_errors),
        "poll_errors": dict(ledger.poll_errors),
        "unprocessed": len(unprocessed),
        "commit_skips": len(skips),
        "uncovered_after_reread": len(uncovered),
        "produce_s": round(produce_s, 1),
        "test_s": round(time.monotonic() - started, 1),
        "chaos": runner.report.summary(),
    }
    report("group" if group_protocol == "classic" else f"group-{group_protocol}", numbers)
    assert not unprocessed, (unprocessed[:10], numbers)
    assert not skips, (skips[:10], numbers)
    assert not uncovered, (uncovered[:10], numbers)
    assert {p for p, _, _ in ledger.commits} == set(range(PARTITIONS)), numbers
    assert len(runner.report.steps) == len(runner.schedule), numbers
    assert ledger.rejoins == 3, numbers
