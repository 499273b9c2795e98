"""Share groups (KIP-932) against a real Kafka 4.4 broker.

One single-node cluster for the module, started with short-lock settings
(``aiokafka_lead.testing.share_cluster``): the group-level acquisition lock may be 1 s or
more and members heartbeat every second, so a lock expiry or a new member's assignment
takes seconds, not the defaults' 30 s and 5 s. Every test has its own topic and group, and
the group starts at the earliest offset (``share.auto.offset.reset``).
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

import anyio
import anyio.to_thread
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.admin.types import ConfigResource
from aiokafka_lead.bench import share_java
from aiokafka_lead.cli import main
from aiokafka_lead.errors import (
    GroupIdNotFoundError,
    IllegalStateError,
    InvalidRecordStateError,
    NonEmptyGroupError,
)
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.messages import (
    FindCoordinatorRequest,
    MetadataRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupHeartbeatRequest,
)
from aiokafka_lead.requests.coordinator import new_member_id
from aiokafka_lead.share import AcknowledgeType, AIOKafkaShareConsumer, ShareConsumerRecord
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.cluster.cluster import KafkaCluster
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.share_cluster import SHARE_TEST_PROPERTIES
from tests.integration.conftest import unique
from tests.integration.test_fake_vs_real import RETRY_LATER, normalize, plain_batch, run_against
from tests.integration.test_fake_vs_real import produce as produce_request
from tests.support.otel import instrumented
from tests.support.waiting import eventually

#: ... and NOT_COORDINATOR while the fresh cluster's group coordinator loads
JOIN_LATER = (*RETRY_LATER, 16)
ACCEPT, RELEASE, REJECT, RENEW = (
    AcknowledgeType.ACCEPT,
    AcknowledgeType.RELEASE,
    AcknowledgeType.REJECT,
    AcknowledgeType.RENEW,
)


@pytest.fixture(scope="module")
def share_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(
        tmp_path_factory.mktemp("share-cluster"),
        1,
        profile="testing",
        extra_properties=dict(SHARE_TEST_PROPERTIES),
        stop_at_exit=True,
    )
    cluster.up(timeout=120)
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture
def bootstrap(share_cluster: KafkaCluster) -> str:
    return share_cluster.bootstrap()


@pytest.fixture
async def admin(bootstrap: str) -> AsyncIterator[AdminClient]:
    async with AdminClient(bootstrap_servers=bootstrap) as client:
        yield client


async def new_group(admin: AdminClient, topic: str, partitions: int = 1, **configs: str) -> str:
    """A topic and a share group reading it from the start, with group ``configs``."""
    await admin.create_topics([NewTopic(topic, partitions, 1)])
    group = unique("share")
    settings = {"share.auto.offset.reset": "earliest", **configs}
    await admin.alter_configs([ConfigResource("group", group, settings)])
    return group


async def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int = 1) -> None:
    """One batch per record (send_and_wait), so the broker can hand them to different members."""
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        for i, value in enumerate(values):
            await producer.send_and_wait(topic, value, partition=i % partitions)


def member(bootstrap: str, topic: str, group: str, **kwargs: Any) -> AIOKafkaShareConsumer[bytes, bytes]:
    kwargs.setdefault("fetch_max_wait_ms", 200)
    return AIOKafkaShareConsumer(topic, group_id=group, bootstrap_servers=bootstrap, **kwargs)


async def poll_until(
    consumer: AIOKafkaShareConsumer[bytes, bytes], want: int, seconds: float
) -> list[ShareConsumerRecord[bytes, bytes]]:
    """Poll until ``want`` records came (implicit mode accepts each poll's records)."""
    out: list[ShareConsumerRecord[bytes, bytes]] = []
    with anyio.fail_after(seconds):
        while len(out) < want:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                out += records
    return out


async def nothing_within(consumer: AIOKafkaShareConsumer[bytes, bytes], seconds: float) -> None:
    with anyio.move_on_after(seconds):
        got = await consumer.getmany(timeout_ms=int(seconds * 1000))
        assert got == {}, f"unexpected records {got}"


async def test_four_members_share_one_partition_each_record_accepted_once(
    bootstrap: str, admin: AdminClient
) -> None:
    topic = unique("share4")
    group = await new_group(admin, topic)
    total = 200
    await produce(bootstrap, topic, [b"%d" % i for i in range(total)])
    seen: dict[int, list[tuple[int, int]]] = {}  # member -> (offset, delivery count)
    accepted: Counter[int] = Counter()
    done = anyio.Event()

    async def run(index: int) -> None:
        async with member(bootstrap, topic, group, acknowledgement_mode="explicit", max_poll_records=5) as c:
            while not done.is_set():
                batch = await c.getmany(timeout_ms=200)
                records = [r for rs in batch.values() for r in rs]
                for r in records:
                    seen.setdefault(index, []).append((r.offset, r.delivery_count))
                    c.acknowledge(r, ACCEPT)
                await anyio.sleep(0.01 * len(records))  # "work": lets the other members fetch
                results = await c.commit()
                assert all(e is None for e in results.values()), results
                accepted.update(r.offset for r in records)
                if len(accepted) >= total:
                    done.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(run, i)
    assert set(accepted) == set(range(total))
    assert max(accepted.values()) == 1, [o for o, n in accepted.items() if n > 1]
    workers = {i for i, got in seen.items() if got}
    assert len(workers) >= 3, {i: len(got) for i, got in seen.items()}
    # nothing comes back: every record was accepted
    async with member(bootstrap, topic, group) as late:
        await nothing_within(late, 1.5)


async def test_release_redelivers_with_delivery_count_two(bootstrap: str, admin: AdminClient) -> None:
    topic = unique("release")
    group = await new_group(admin, topic)
    await produce(bootstrap, topic, [b"job"])
    async with member(bootstrap, topic, group, acknowledgement_mode="explicit") as c:
        [record] = await poll_until(c, 1, 20)
        assert record.delivery_count == 1
        c.acknowledge(record, RELEASE)
        assert await c.commit() == {TopicPartition(topic, 0): None}
        [again] = await poll_until(c, 1, 20)  # the only member: it gets it back
        assert (again.offset, again.value, again.delivery_count) == (0, b"job", 2)
        c.acknowledge(again, ACCEPT)


async def test_deliveries_traced_under_their_producers_spans(bootstrap: str, admin: AdminClient) -> None:
    """aiokafka_lead.instrumentation.opentelemetry: a share consumer's records get CONSUMER
    spans, children of the spans of their sends, named by the share group."""
    topic = unique("traced")
    group = await new_group(admin, topic)
    with instrumented() as recorded:
        await produce(bootstrap, topic, [b"a", b"b", b"c"])
        async with member(bootstrap, topic, group) as c:
            with anyio.fail_after(20):
                first = await c.getone()
            records = [first, *await poll_until(c, 2, 20)]
    sends = {s.context.span_id: s for s in recorded.spans(f"{topic} send") if s.context is not None}
    reads = [s for s in recorded.spans(f"{topic} receive") if s.parent is not None and s.parent.is_remote]
    assert sorted(r.offset for r in records) == [0, 1, 2] and len(sends) == len(reads) == 3
    for read in reads:
        attributes = read.attributes or {}
        assert read.parent is not None and read.parent.span_id in sends
        assert attributes["messaging.consumer.group.name"] == group
        assert (
            attributes["messaging.message.id"] == f"{topic}.0.{attributes['messaging.kafka.message.offset']}"
        )
    consumed = [p.value for a, p in recorded.points("messaging.client.consumed.messages")]
    assert sum(consumed) == 3


async def test_reject_archives_the_record(bootstrap: str, admin: AdminClient) -> None:
    topic = unique("reject")
    group = await new_group(admin, topic)
    await produce(bootstrap, topic, [b"bad", b"good"])
    async with member(bootstrap, topic, group, acknowledgement_mode="explicit") as c:
        records = await poll_until(c, 2, 20)
        c.acknowledge(records[0], REJECT)
        c.acknowledge(records[1], RELEASE)
        await c.commit()
        got = await poll_until(c, 1, 20)
        assert [(r.value, r.delivery_count) for r in got] == [(b"good", 2)]
        c.acknowledge(got[0], ACCEPT)
        assert await c.commit() == {TopicPartition(topic, 0): None}
        await nothing_within(c, 1.0)


async def test_lock_timeout_hands_the_record_to_another_member(bootstrap: str, admin: AdminClient) -> None:
    topic = unique("lock")
    group = await new_group(admin, topic, **{"share.record.lock.duration.ms": "2000"})
    await produce(bootstrap, topic, [b"slow"])
    async with member(bootstrap, topic, group, acknowledgement_mode="explicit") as holder:
        [held] = await poll_until(holder, 1, 20)
        assert 0 < held.lock_remaining_ms() <= 2000
        async with member(bootstrap, topic, group) as other:
            [taken] = await poll_until(other, 1, 20)  # after the lock expired
            # 2, or more when the holder's own fetch took it back meanwhile (and let it expire)
            assert taken.offset == held.offset and taken.delivery_count >= 2
            holder.acknowledge(held, ACCEPT)  # too late: `other` holds it now
            results = await holder.commit()
            assert isinstance(results[TopicPartition(topic, 0)], InvalidRecordStateError)
            assert await other.commit() == {TopicPartition(topic, 0): None}


async def test_delivery_count_limit_archives_a_poison_record(bootstrap: str, admin: AdminClient) -> None:
    topic = unique("poison")
    group = await new_group(admin, topic, **{"share.delivery.count.limit": "2"})
    await produce(bootstrap, topic, [b"poison"])
    async with member(bootstrap, topic, group, acknowledgement_mode="explicit") as c:
        counts = []
        for _ in range(2):
            [r] = await poll_until(c, 1, 20)
            counts.append(r.delivery_count)
            c.acknowledge(r, RELEASE)
            await c.commit()
        assert counts == [1, 2]
        await produce(bootstrap, topic, [b"next"])
        [r] = await poll_until(c, 1, 20)
        assert (r.value, r.delivery_count) == (b"next", 1)
        c.acknowledge(r, ACCEPT)


async def test_renew_keeps_a_slow_record(bootstrap: str, admin: AdminClient) -> None:
    topic = unique("renew")
    group = await new_group(admin, topic, **{"share.record.lock.duration.ms": "2000"})
    await produce(bootstrap, topic, [b"long job"])
    async with member(bootstrap, topic, group, acknowledgement_mode="explicit") as slow:
        [record] = await poll_until(slow, 1, 20)
        first_deadline = record.lock_deadline
        async with member(bootstrap, topic, group) as other, anyio.create_task_group() as tg:
            tg.start_soon(nothing_within, other, 5.0)  # 2.5 lock durations
            for _ in range(5):
                await anyio.sleep(1.0)
                slow.acknowledge(record, RENEW)
                assert await slow.commit() == {TopicPartition(topic, 0): None}
            assert record.lock_deadline > first_deadline + 3
            slow.acknowledge(record, ACCEPT)
            assert await slow.commit() == {TopicPartition(topic, 0): None}
            await nothing_within(other, 1.0)


async def test_killed_member_records_are_redelivered(bootstrap: str, admin: AdminClient) -> None:
    topic = unique("kill")
    group = await new_group(admin, topic, **{"share.record.lock.duration.ms": "2000"})
    total = 30
    await produce(bootstrap, topic, [b"%d" % i for i in range(total)])
    victim = member(bootstrap, topic, group, acknowledgement_mode="explicit", max_poll_records=10)
    await victim.start()
    held = await poll_until(victim, 1, 20)
    victim.acknowledge(held[0], ACCEPT)
    await victim.commit()
    in_hand = {r.offset for r in held[1:]}
    # killed: the connections drop without acknowledgements, session close or leave
    await victim._core.close()
    victim._state = "stopped"
    async with member(bootstrap, topic, group) as survivor:
        got = await poll_until(survivor, total - 1, 30)
    offsets = Counter(r.offset for r in got)
    assert set(offsets) == set(range(total)) - {held[0].offset}
    assert max(offsets.values()) == 1
    # what it had in hand comes again (and whatever it had fetched ahead, unseen)
    assert in_hand <= {r.offset for r in got if r.delivery_count == 2}


async def test_explicit_mode_refuses_a_poll_with_unacknowledged_records(
    bootstrap: str, admin: AdminClient
) -> None:
    topic = unique("explicit")
    group = await new_group(admin, topic)
    await produce(bootstrap, topic, [b"a", b"b"])
    async with member(bootstrap, topic, group, acknowledgement_mode="explicit") as c:
        records = await poll_until(c, 2, 20)
        c.acknowledge(records[0], ACCEPT)
        with pytest.raises(IllegalStateError, match=r"1 delivered record\(s\) not acknowledged"):
            await c.getmany(timeout_ms=0)
        c.acknowledge(records[1], ACCEPT)
        with pytest.raises(IllegalStateError, match="not awaiting acknowledgement"):
            c.acknowledge(records[1], ACCEPT)
        await c.getmany(timeout_ms=0)


async def test_implicit_mode_accepts_at_the_next_poll_and_close_releases(
    bootstrap: str, admin: AdminClient
) -> None:
    topic = unique("implicit")
    group = await new_group(admin, topic)
    await produce(bootstrap, topic, [b"%d" % i for i in range(4)])
    async with member(bootstrap, topic, group, max_poll_records=2, share_acquire_mode="record_limit") as c:
        first = await poll_until(c, 2, 20)
        assert len(first) == 2  # the strict limit: never more than max_poll_records acquired
        second = await poll_until(c, 2, 20)  # accepts `first`
        assert {r.offset for r in first + second} == {0, 1, 2, 3}
    # close released `second` (delivered, not accepted): they come back, `first` does not
    async with member(bootstrap, topic, group) as again:
        back = await poll_until(again, 2, 20)
        assert sorted((r.offset, r.delivery_count) for r in back) == sorted((r.offset, 2) for r in second)
        await nothing_within(again, 1.0)


@pytest.mark.parametrize(("mode", "acquired"), [("batch_optimized", 6), ("record_limit", 2)])
async def test_record_limit_mode_never_acquires_more_than_max_poll_records(
    bootstrap: str, admin: AdminClient, mode: str, acquired: int
) -> None:
    """KIP-1206: six records in one batch; batch-optimized acquires the whole batch for a
    limit of 2, record-limit exactly 2 (the other four stay available to other members)."""
    topic = unique("strict")
    group = await new_group(admin, topic)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=1000) as producer:
        handles = [await producer.send(topic, b"%d" % i, partition=0) for i in range(6)]
        await producer.flush()
        assert len({(await h).offset for h in handles}) == 6
    async with member(bootstrap, topic, group, max_poll_records=2, share_acquire_mode=mode) as c:
        got = await poll_until(c, 2, 20)
        assert len(got) == 2
        assert c._fetcher.acquired == acquired


async def test_admin_lists_describes_and_moves_share_group_offsets(
    bootstrap: str, admin: AdminClient
) -> None:
    topic = unique("admin")
    group = await new_group(admin, topic, partitions=2)
    await produce(bootstrap, topic, [b"%d" % i for i in range(10)], partitions=2)
    async with member(bootstrap, topic, group, client_id="share-admin-test") as c:
        await poll_until(c, 10, 20)
        assert all(e is None for e in (await c.commit()).values())
        listed = {g.group_id: g.state for g in await admin.list_share_groups()}
        assert listed[group] == "Stable"
        [described] = await admin.describe_share_groups([group])
        [m] = described.members
        assert (described.group_id, m.member_id, m.client_id) == (group, c.member_id, "share-admin-test")
        assert m.subscribed_topics == (topic,)
        assert m.assignment == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        offsets = await admin.list_share_group_offsets(group)
        # every record is done (lag 0); Kafka 4.4 moves the start offset itself only later
        # (its own kafka-share-groups.sh shows the same)
        assert set(offsets) == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        assert {o.lag for o in offsets.values()} == {0}
        with pytest.raises(NonEmptyGroupError):
            await admin.alter_share_group_offsets(group, {TopicPartition(topic, 0): 2})
    # empty now: move partition 0 back by three records; they are delivered again
    await admin.alter_share_group_offsets(group, {TopicPartition(topic, 0): 2})
    only0 = await admin.list_share_group_offsets(group, [TopicPartition(topic, 0)])
    assert [(tp, o.start_offset) for tp, o in only0.items()] == [(TopicPartition(topic, 0), 2)]
    async with member(bootstrap, topic, group) as c:
        again = await poll_until(c, 3, 20)
        assert sorted((r.partition, r.offset) for r in again) == [(0, 2), (0, 3), (0, 4)]
    await admin.delete_share_group_offsets(group, [topic])
    assert await admin.list_share_group_offsets(group) == {}
    await admin.delete_share_groups([group])
    assert group not in {g.group_id for g in await admin.list_share_groups()}
    with pytest.raises(GroupIdNotFoundError, match=group):
        await admin.describe_share_groups([group])


async def test_share_groups_command_line(bootstrap: str, admin: AdminClient, capsys: Any) -> None:
    topic = unique("cli")
    group = await new_group(admin, topic)
    await produce(bootstrap, topic, [b"a", b"b", b"c"])
    async with member(bootstrap, topic, group) as c:
        await poll_until(c, 3, 20)
        await c.commit()

    async def cli(*argv: str) -> str:
        capsys.readouterr()
        code = await anyio.to_thread.run_sync(main, ["share-groups", "--bootstrap-server", bootstrap, *argv])
        assert code == 0
        return str(capsys.readouterr().out)

    assert group in (await cli("--list")).split()
    described = (await cli("--describe", "--group", group)).splitlines()
    assert described[0].split() == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
    assert described[1].split()[:3] == [group, topic, "0"] and described[1].split()[4] == "0"
    plan = await cli("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest")
    assert "Dry run" in plan
    await cli("--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "1", "--execute")
    assert (await admin.list_share_group_offsets(group))[TopicPartition(topic, 0)].start_offset == 1
    await cli("--delete", "--group", group)
    assert group not in (await cli("--list")).split()


async def test_interop_with_javas_share_consumer(bootstrap: str, admin: AdminClient) -> None:
    """Two Java KafkaShareConsumers and two of ours in one group, records produced while
    they run: every record accepted exactly once, by one side or the other."""
    topic = unique("interop")
    group = await new_group(admin, topic)
    total = 300
    classpath = await anyio.to_thread.run_sync(share_java.build)
    java_cmd = share_java.command(
        classpath, bootstrap, topic, group, explicit=True, idle_ms=3000, max_ms=45_000
    )
    ours: Counter[int] = Counter()
    theirs: Counter[int] = Counter()
    java_done = anyio.Event()

    async def java_member() -> None:
        result = await anyio.run_process(java_cmd, check=False)
        out = result.stdout.decode()
        assert result.returncode == 0, result.stderr.decode()[-3000:]
        for line in out.splitlines():
            if line.startswith("ACCEPTED "):
                _, _partition, offset, _count = line.split()
                theirs[int(offset)] += 1

    async def our_member() -> None:
        async with member(bootstrap, topic, group, acknowledgement_mode="explicit", max_poll_records=20) as c:
            idle_since = anyio.current_time()
            while not (java_done.is_set() and anyio.current_time() - idle_since > 2):
                batch = await c.getmany(timeout_ms=200)
                records = [r for rs in batch.values() for r in rs]
                if not records:
                    continue
                idle_since = anyio.current_time()
                for r in records:
                    c.acknowledge(r, ACCEPT)
                await anyio.sleep(0.002 * len(records))
                results = await c.commit()
                if results.get(TopicPartition(topic, 0)) is None:
                    ours.update(r.offset for r in records)

    async def producer_paced() -> None:
        with anyio.fail_after(60):
            await eventually(lambda: _members(admin, group, 4), interval=0.2)
        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
            for i in range(total):
                await producer.send_and_wait(topic, b"%d" % i)
                if i % 10 == 9:
                    await anyio.sleep(0.05)

    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            tg.start_soon(our_member)
            tg.start_soon(our_member)
            async with anyio.create_task_group() as javas:
                javas.start_soon(java_member)
                javas.start_soon(java_member)
                javas.start_soon(producer_paced)
            java_done.set()
    both = ours + theirs
    assert set(both) == set(range(total)), sorted(set(range(total)) - set(both))[:10]
    assert max(both.values()) == 1, [o for o, n in both.items() if n > 1][:10]
    assert ours and theirs, (len(ours), len(theirs))


async def _members(admin: AdminClient, group: str, count: int) -> bool:
    try:
        [described] = await admin.describe_share_groups([group])
    except GroupIdNotFoundError:
        return False
    return len(described.members) >= count


# ------------------------------------------------------------- fake vs real


def _share_fetch(
    group: str,
    member_id: str,
    epoch: int,
    topic_id: uuid.UUID,
    acks: Sequence[tuple[int, int, int]] = (),
    wait: int = 500,
) -> ShareFetchRequest:
    batches = [
        ShareFetchRequest.AcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=[t])
        for f, la, t in acks
    ]
    return ShareFetchRequest(
        group_id=group,
        member_id=member_id,
        share_session_epoch=epoch,
        max_wait_ms=wait,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=500,
        batch_size=500,
        topics=[
            ShareFetchRequest.FetchTopic(
                topic_id=topic_id,
                partitions=[
                    ShareFetchRequest.FetchPartition(partition_index=0, acknowledgement_batches=batches)
                ],
            )
        ],
    )


def _share_ack(
    group: str, member_id: str, epoch: int, topic_id: uuid.UUID, acks: Sequence[tuple[int, int, int]]
) -> ShareAcknowledgeRequest:
    batches = [
        ShareAcknowledgeRequest.AcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=[t])
        for f, la, t in acks
    ]
    return ShareAcknowledgeRequest(
        group_id=group,
        member_id=member_id,
        share_session_epoch=epoch,
        topics=[
            ShareAcknowledgeRequest.AcknowledgeTopic(
                topic_id=topic_id,
                partitions=[
                    ShareAcknowledgeRequest.AcknowledgePartition(
                        partition_index=0, acknowledgement_batches=batches
                    )
                ],
            )
        ],
    )


def share_scenario(group: str) -> Callable[[Connection, str], Awaitable[dict[str, Any]]]:
    """Join, open a session, acknowledge (accept, release, again, at wrong epochs), close."""

    async def steps(conn: Connection, topic: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        metadata = await conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]))
        tid = metadata.topics[0].topic_id
        out["produce"] = await conn.send(produce_request(topic, plain_batch()), version=12)
        me = new_member_id()
        find = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
        with anyio.fail_after(30):  # a fresh real cluster creates __consumer_offsets first
            while (await conn.send(find)).coordinators[0].error_code in JOIN_LATER:  # noqa: ASYNC110
                await anyio.sleep(0.2)
        join = ShareGroupHeartbeatRequest(
            group_id=group, member_id=me, member_epoch=0, subscribed_topic_names=[topic]
        )
        with anyio.fail_after(30):  # and loads it
            while (hb := await conn.send(join)).error_code in JOIN_LATER:  # noqa: ASYNC110 - asks the broker
                await anyio.sleep(0.2)
        out["heartbeat_join_error"] = hb.error_code
        with anyio.fail_after(30):  # a real coordinator assigns a moment after the join
            while hb.assignment is None or not hb.assignment.topic_partitions:
                assert hb.error_code == 0, hb
                await anyio.sleep(0.1)
                hb = await conn.send(
                    ShareGroupHeartbeatRequest(group_id=group, member_id=me, member_epoch=hb.member_epoch)
                )
        out["heartbeat_fenced"] = await conn.send(
            ShareGroupHeartbeatRequest(group_id=group, member_id=me, member_epoch=hb.member_epoch + 7)
        )
        out["heartbeat_unknown"] = await conn.send(
            ShareGroupHeartbeatRequest(group_id=group, member_id=new_member_id(), member_epoch=3)
        )
        out["fetch_open_with_acks"] = await conn.send(_share_fetch(group, me, 0, tid, acks=[(0, 0, 1)]))
        out["fetch_open"] = await conn.send(_share_fetch(group, me, 0, tid))
        # Acknowledged on their own, not on a fetch: a real broker runs a ShareFetch's
        # acknowledgements and its fetch side by side, so whether that fetch re-acquires
        # the record it releases is a race.
        out["ack_accept_release"] = await conn.send(_share_ack(group, me, 1, tid, [(0, 0, 1), (1, 1, 2)]))
        out["fetch_reacquires_released"] = await conn.send(_share_fetch(group, me, 2, tid))
        out["ack_below_start"] = await conn.send(_share_ack(group, me, 3, tid, [(0, 0, 1)]))
        out["ack_wrong_epoch"] = await conn.send(_share_ack(group, me, 99, tid, [(1, 1, 1)]))
        out["ack_no_session"] = await conn.send(_share_ack(group, new_member_id(), 1, tid, [(1, 1, 1)]))
        out["ack_epoch_zero"] = await conn.send(_share_ack(group, me, 0, tid, [(1, 1, 1)]))
        out["ack_release_rest"] = await conn.send(_share_ack(group, me, 4, tid, [(1, 2, 2)]))
        out["ack_close_not_acquired"] = await conn.send(_share_ack(group, me, -1, tid, [(1, 2, 1)]))
        out["heartbeat_leave"] = await conn.send(
            ShareGroupHeartbeatRequest(group_id=group, member_id=me, member_epoch=-1)
        )
        return out

    return steps


def _comparable(response: Any) -> Any:
    """normalize(), with member ids and numbers in error messages (epochs) masked and the
    records compared by length (their bytes are compared by the Fetch comparison)."""
    tree = normalize(response)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key.endswith("error_message") and isinstance(value, str):
                    out[key] = re.sub(r"\d+", "<n>", re.sub(r"Member \S+ ", "Member <id> ", value))
                elif key == "records" and isinstance(value, bytes):
                    out[key] = len(value)
                else:
                    out[key] = walk(value)
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(tree)


async def test_the_fake_answers_share_requests_like_a_real_broker(bootstrap: str, admin: AdminClient) -> None:
    topic = unique("share-fvr")
    group = await new_group(admin, topic, **{"share.record.lock.duration.ms": "15000"})
    host, port = bootstrap.split(",", maxsplit=1)[0].rsplit(":", 1)
    real = await run_against(host, int(port), topic, share_scenario(group))
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic(topic, partitions=1, replication_factor=1)
        fc.shares.configure(group, auto_offset_reset="earliest", lock_ms=15_000)
        fake = await run_against(*fc.address(1), topic, share_scenario(group))
    assert fake.keys() == real.keys()
    for step in real:
        f, r = _comparable(fake[step]), _comparable(real[step])
        assert f == r, f"{step}:\n fake={f}\n real={r}"
    opened = real["fetch_open"].responses[0].partitions[0].acquired_records
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in opened] == [(0, 2, 1)]
    again = real["fetch_reacquires_released"].responses[0].partitions[0].acquired_records
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in again] == [(1, 1, 2)]
