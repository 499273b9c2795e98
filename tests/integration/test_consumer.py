"""The consumer against the real 3-node KRaft cluster.

Test data comes from a deliberately dumb producer (plain ProduceRequests with acks=all,
re-reading metadata after any error) so these tests do not depend on the producer under
development. It may write a duplicate after a timeout; the checks therefore compare
what the consumer saw with what the log holds, read back afterwards.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.consumer import (
    AIOKafkaConsumer,
    CommitFailedError,
    ConsumerRebalanceListener,
    ConsumerStoppedError,
    IllegalStateError,
)
from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.protocol.messages import ProduceRequest
from aiokafka_lead.records import RecordBatchBuilder
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.leaders import rotate_leadership
from tests.integration.conftest import unique
from tests.support.waiting import eventually


class RawProducer:
    """acks=all ProduceRequests to the current leader; retries through leader moves."""

    def __init__(self, bootstrap: str, topics: Iterable[str]) -> None:
        self.topics = set(topics)
        self.core = ClientCore(
            "test-producer",
            ConnectionConfig(
                bootstrap_servers=bootstrap,
                client_id="test-producer",
                request_timeout_ms=15_000,
                retry_backoff_ms=50,
            ),
            topics=lambda: self.topics,
        )
        self.sent: dict[TopicPartition, list[bytes]] = {}

    async def __aenter__(self) -> RawProducer:
        await self.core.enter()
        await self.core.wait_for_topics(self.topics, 30_000)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.core.close()

    async def send(self, tp: TopicPartition, values: Sequence[bytes]) -> None:
        builder = RecordBatchBuilder()
        # Now, not 0: records stamped 1970 are past retention.ms, so the broker's retention
        # check (30 s after a node restarts, e.g. after the chaos tests) would delete them.
        now_ms = int(time.time() * 1000)
        for value in values:
            builder.append(now_ms, None, value, ())
        data = builder.build(-1, -1, -1)
        request = ProduceRequest(
            acks=-1,
            timeout_ms=10_000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=tp.topic,
                    partition_data=[ProduceRequest.PartitionProduceData(index=tp.partition, records=data)],
                )
            ],
        )
        store = self.core.store
        with anyio.fail_after(60):
            while True:
                leader = store.leader_for(tp)
                code: int = E.UNKNOWN_SERVER_ERROR
                if leader is not None:
                    try:
                        response = await self.core.send(leader.node_id, request)
                        code = response.responses[0].partition_responses[0].error_code
                    except KafkaError:
                        code = E.UNKNOWN_SERVER_ERROR
                if code == E.NONE:
                    self.sent.setdefault(tp, []).extend(values)
                    return
                await anyio.sleep(0.05)
                with contextlib.suppress(KafkaError):
                    await self.core.refresh_metadata(f"test producer: error {code} on {tp}")


async def read_all(
    bootstrap: str, tps: Sequence[TopicPartition], ends: dict[TopicPartition, int]
) -> dict[TopicPartition, list[tuple[int, bytes | None]]]:
    """(offset, value) of every record below ``ends``, read by a fresh consumer: the truth."""
    out: dict[TopicPartition, list[tuple[int, bytes | None]]] = {tp: [] for tp in tps}
    async with AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as reader:
        reader.assign(tps)
        with anyio.fail_after(60):
            while any((out[tp][-1][0] + 1 if out[tp] else 0) < ends[tp] for tp in tps):
                for tp, records in (await reader.getmany(timeout_ms=1000)).items():
                    out[tp].extend((r.offset, r.value) for r in records if r.offset < ends[tp])
    return out


def by_partition(records: Iterable[Any]) -> dict[TopicPartition, list[tuple[int, bytes | None]]]:
    out: dict[TopicPartition, list[tuple[int, bytes | None]]] = {}
    for r in records:
        out.setdefault(TopicPartition(r.topic, r.partition), []).append((r.offset, r.value))
    return out


# ------------------------------------------------------------------------------- tests
pytestmark = pytest.mark.integration


def tps_of(topic: str, n: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in range(n)]


async def caught_up(c: AIOKafkaConsumer[Any, Any], ends: dict[TopicPartition, int]) -> bool:
    for tp, end in ends.items():
        if tp in c.assignment() and await c.position(tp) < end:
            return False
    return True


async def more_than(items: list[Any], n: int) -> bool:
    return len(items) > n


async def test_consume_while_every_leader_moves_three_times(
    kafka_cluster: Any, admin: AdminClient, topic3: str
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    tps = tps_of(topic3, 3)
    consumed: list[Any] = []
    done = anyio.Event()
    async with (
        RawProducer(bootstrap, [topic3]) as producer,
        AIOKafkaConsumer(
            bootstrap_servers=bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=200
        ) as consumer,
    ):
        consumer.assign(tps)

        produced = anyio.Event()

        async def produce() -> None:
            seq = 0
            while not done.is_set():
                for tp in tps:
                    await producer.send(tp, [f"{tp.partition}:{seq + i}".encode() for i in range(5)])
                seq += 5
                await anyio.sleep(0.01)
            produced.set()

        async def consume() -> None:
            while True:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    consumed.extend(records)

        with anyio.fail_after(150):
            async with anyio.create_task_group() as tg:
                tg.start_soon(produce)
                tg.start_soon(consume)
                for _ in range(3):
                    before = len(consumed)
                    await eventually(lambda before=before: more_than(consumed, before + 50))  # traffic flows
                    await rotate_leadership(admin, [topic3])
                done.set()
                await produced.wait()
                ends = {
                    tp: info.offset for tp, info in (await admin.list_offsets(dict.fromkeys(tps, -1))).items()
                }
                while not await caught_up(consumer, ends):  # noqa: ASYNC110 - positions have no event
                    await anyio.sleep(0.05)
                tg.cancel_scope.cancel()
        stats = consumer.fetcher.stats
        incremental = sum(session.incremental_fetches for session in consumer.fetcher.sessions.values())
    truth = await read_all(bootstrap, tps, ends)
    seen = by_partition(r for r in consumed if r.offset < ends[TopicPartition(r.topic, r.partition)])
    for tp in tps:
        assert seen[tp] == truth[tp], f"{tp}: consumed records differ from the log"
        logged = {v for _, v in truth[tp]}
        assert all(v in logged for v in producer.sent[tp]), f"{tp}: an acknowledged record is missing"
    assert stats.hints_applied >= 3
    assert incremental > 0, "no KIP-227 incremental fetch was used"
    for label, values in (
        ("hint -> first answer from the new leader", stats.move_first_fetch_s),
        ("hint -> first records from the new leader", stats.move_recovery_s),
    ):
        v = sorted(values)
        if v:
            median, worst = v[len(v) // 2] * 1e3, v[-1] * 1e3
            print(f"real cluster: {label}: n={len(v)} median {median:.1f} ms max {worst:.1f} ms")


# ------------------------------------------------------------------------------ groups
class Tracker(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.revoked: list[set[TopicPartition]] = []
        self.assigned: list[set[TopicPartition]] = []
        self.lost: list[set[TopicPartition]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revoked.append(revoked)

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.assigned.append(assigned)

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.lost.append(lost)


def group_member(bootstrap: str, group: str, **kwargs: Any) -> AIOKafkaConsumer[bytes, bytes]:
    kwargs.setdefault("auto_offset_reset", "earliest")
    kwargs.setdefault("enable_auto_commit", False)
    kwargs.setdefault("session_timeout_ms", 6000)
    kwargs.setdefault("heartbeat_interval_ms", 300)
    kwargs.setdefault("fetch_max_wait_ms", 200)
    return AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, **kwargs)


async def test_group_of_three_survives_join_leave_and_kill(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic, group = unique("grp"), unique("g")
    await admin.create_topics([NewTopic(topic, 6, 3)])
    tps = tps_of(topic, 6)
    processed: dict[TopicPartition, set[int]] = {tp: set() for tp in tps}
    committed_max: dict[TopicPartition, int] = {}
    stop_producing = anyio.Event()

    async def work(c: AIOKafkaConsumer[bytes, bytes]) -> None:
        """Process, then commit what was processed (at least once)."""
        try:
            while True:
                batch = await c.getmany(timeout_ms=200)
                for tp, records in batch.items():
                    processed[tp].update(r.offset for r in records)
                if batch:
                    offsets = {tp: records[-1].offset + 1 for tp, records in batch.items()}
                    # a rebalance since the poll: the group refuses (CommitFailedError), or the
                    # partition already went and the commit is refused here, as in aiokafka
                    with contextlib.suppress(CommitFailedError, IllegalStateError):
                        await c.commit(offsets)
                        for tp, off in offsets.items():
                            committed_max[tp] = max(committed_max.get(tp, 0), off)
        except ConsumerStoppedError:
            return

    async with RawProducer(bootstrap, [topic]) as producer:
        produced = anyio.Event()

        async def produce() -> None:
            seq = 0
            while not stop_producing.is_set():
                for tp in tps:
                    await producer.send(tp, [f"{seq}".encode()] * 3)
                seq += 1
                await anyio.sleep(0.02)
            produced.set()

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(produce)
                c1 = group_member(bootstrap, group)
                c2 = group_member(bootstrap, group)
                c3 = group_member(bootstrap, group)
                for c in (c1, c2):
                    await c.start()
                    c.subscribe([topic])
                    tg.start_soon(work, c)
                with anyio.fail_after(30):
                    await eventually(
                        lambda: len(c1.assignment()) + len(c2.assignment()) == 6 and c2.assignment()
                    )
                await c3.start()  # a member joins
                c3.subscribe([topic])
                tg.start_soon(work, c3)
                with anyio.fail_after(30):
                    await eventually(lambda: [len(c.assignment()) for c in (c1, c2, c3)] == [2, 2, 2])
                await c2.stop()  # one leaves (commits, LeaveGroup)
                with anyio.fail_after(30):
                    await eventually(
                        lambda: len(c1.assignment()) + len(c3.assignment()) == 6 and c3.assignment()
                    )
                await c3._abandon()  # one is killed: no commit, no LeaveGroup; its session must expire
                with anyio.fail_after(40):
                    await eventually(lambda: len(c1.assignment()) == 6)
                stop_producing.set()
                await produced.wait()
                ends = {
                    tp: info.offset for tp, info in (await admin.list_offsets(dict.fromkeys(tps, -1))).items()
                }
                with anyio.fail_after(30):
                    await eventually(lambda: all(committed_max.get(tp, 0) >= ends[tp] for tp in tps))
                committed = await admin.list_consumer_group_offsets(group)
                await c1.stop()
                tg.cancel_scope.cancel()
    for tp in tps:
        assert processed[tp] >= set(range(ends[tp])), f"{tp}: records skipped"
        assert committed[tp].offset == ends[tp]
    await admin.delete_topics([topic])


async def test_cooperative_sticky_keeps_unaffected_partitions(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic, group = unique("coop"), unique("g")
    await admin.create_topics([NewTopic(topic, 6, 3)])
    tps = set(tps_of(topic, 6))
    t1 = Tracker()
    opts = {"partition_assignment_strategy": ["cooperative-sticky"]}
    with anyio.fail_after(60):
        async with group_member(bootstrap, group, **opts) as c1:
            c1.subscribe([topic], listener=t1)
            with anyio.fail_after(30):
                await eventually(lambda: c1.assignment() == tps)
            history: list[set[TopicPartition]] = []
            async with group_member(bootstrap, group, **opts) as c2:
                c2.subscribe([topic])
                while not (len(c1.assignment()) == 3 and len(c2.assignment()) == 3):
                    history.append(c1.assignment())
                    await anyio.sleep(0.01)
                kept = c1.assignment()
                # the three partitions c1 kept were never out of its assignment
                assert all(kept <= h for h in history)
                assert t1.revoked == [tps - kept]
                assert t1.lost == []
                assert c1.assignment().isdisjoint(c2.assignment())
            with anyio.fail_after(30):
                await eventually(lambda: c1.assignment() == tps)
            assert len(t1.revoked) == 1  # getting partitions back revokes nothing
    await admin.delete_topics([topic])


async def test_pattern_subscription_picks_up_a_new_topic(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    prefix = unique("pat")
    first, second = f"{prefix}-a", f"{prefix}-b"
    await admin.create_topics([NewTopic(first, 1, 3)])
    with anyio.fail_after(60):
        async with (
            RawProducer(bootstrap, [first]) as producer,
            group_member(bootstrap, unique("g"), metadata_max_age_ms=500) as c,
        ):
            c.subscribe(pattern=f"{prefix}-.*")
            with anyio.fail_after(30):
                await eventually(lambda: c.assignment() == {TopicPartition(first, 0)})
            await producer.send(TopicPartition(first, 0), [b"one"])
            assert (await c.getone()).value == b"one"
            await c.commit()  # the rebalance for the new topic must not replay it
            await admin.create_topics([NewTopic(second, 1, 3)])
            producer.topics.add(second)
            await producer.core.wait_for_topics([second], 30_000)
            await producer.send(TopicPartition(second, 0), [b"two"])
            record = await c.getone()
            assert (record.topic, record.value) == (second, b"two")
            assert c.subscription() == {first, second}
    await admin.delete_topics([first, second])
