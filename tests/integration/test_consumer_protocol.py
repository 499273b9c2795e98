"""KIP-848 consumer-protocol groups against the real 3-node KRaft cluster.

The test clusters expire a silent consumer-protocol member after 10 s
(group.consumer.session.timeout.ms; Kafka's default is 45 s); the heartbeat interval is
the broker's default, 5 s.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import anyio.to_thread

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.consumer import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerStoppedError
from aiokafka_lead.consumer.consumer_protocol import ConsumerGroupMember
from aiokafka_lead.structs import TopicPartition
from tests.integration.conftest import unique
from tests.support.waiting import eventually

GROUPS_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
AUTO_COMMIT_MS = 1000


def member(bootstrap: str, group: str, **kwargs: Any) -> AIOKafkaConsumer[bytes, bytes]:
    kwargs.setdefault("auto_offset_reset", "earliest")
    kwargs.setdefault("fetch_max_wait_ms", 200)
    kwargs.setdefault("auto_commit_interval_ms", AUTO_COMMIT_MS)
    return AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, group_protocol="consumer", **kwargs)


def membership(c: AIOKafkaConsumer[Any, Any]) -> ConsumerGroupMember:
    assert isinstance(c.coordinator, ConsumerGroupMember)
    return c.coordinator


class Changes(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", assigned))

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.calls.append(("lost", lost))


async def produce_until(bootstrap: str, topic: str, partitions: int, stop: anyio.Event) -> None:
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        seq = 0
        while not stop.is_set():
            for p in range(partitions):
                await producer.send(topic, str(seq).encode(), partition=p)
            seq += 1
            await anyio.sleep(0.01)


async def test_group_of_three_on_twelve_partitions_survives_join_leave_and_kill(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic, group = unique("kip848"), unique("g")
    await admin.create_topics([NewTopic(topic, 12, 3)])
    tps = [TopicPartition(topic, p) for p in range(12)]
    seen: dict[tuple[int, int], list[tuple[str, float]]] = {}
    stop = anyio.Event()

    async def work(name: str, c: AIOKafkaConsumer[bytes, bytes]) -> None:
        try:
            while True:
                batch = await c.getmany(timeout_ms=200)
                now = time.monotonic()
                for tp, records in batch.items():
                    for r in records:
                        seen.setdefault((tp.partition, r.offset), []).append((name, now))
        except ConsumerStoppedError:
            return

    def sizes(*cs: AIOKafkaConsumer[Any, Any]) -> list[int]:
        return [len(c.assignment()) for c in cs]

    with anyio.fail_after(150):
        async with anyio.create_task_group() as tg:
            tg.start_soon(produce_until, bootstrap, topic, 12, stop)
            c1, c2, c3 = (member(bootstrap, group, client_id=f"m{i}") for i in (1, 2, 3))
            for name, c in (("c1", c1), ("c2", c2)):
                await c.start()
                c.subscribe([topic])
                tg.start_soon(work, name, c)
            with anyio.fail_after(40):
                await eventually(lambda: sizes(c1, c2) == [6, 6])
            await c3.start()  # a member joins
            c3.subscribe([topic])
            tg.start_soon(work, "c3", c3)
            with anyio.fail_after(40):
                await eventually(lambda: sizes(c1, c2, c3) == [4, 4, 4])
            await c2.stop()  # one leaves: commits, revokes, heartbeats with epoch -1
            with anyio.fail_after(40):
                await eventually(lambda: sizes(c1, c3) == [6, 6])
            await c3._abandon()  # one is killed: no commit, no leave; its session expires
            killed_at = time.monotonic()
            with anyio.fail_after(60):
                await eventually(lambda: sizes(c1) == [12])
            stop.set()
            listed = await admin.list_offsets(dict.fromkeys(tps, -1))
            ends = {tp.partition: info.offset for tp, info in listed.items()}
            with anyio.fail_after(30):
                await eventually(lambda: all((p, end - 1) in seen for p, end in ends.items()))
            await c1.stop()
            tg.cancel_scope.cancel()
    skipped = [(p, o) for p, end in ends.items() for o in range(end) if (p, o) not in seen]
    assert not skipped, skipped[:10]
    repeated = {key: sightings for key, sightings in seen.items() if len(sightings) > 1}
    # only the killed member's last uncommitted records come again: the join and the leave
    # committed before handing partitions over, and auto-commit runs every second
    for (p, o), sightings in repeated.items():
        first_by, first_at = sightings[0]
        assert first_by == "c3" and killed_at - first_at < AUTO_COMMIT_MS / 1000 + 1.0, (p, o, sightings)
    await admin.delete_topics([topic])


async def test_kafka_group_command_describes_our_consumer_group(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic, group = unique("kip848-cmd"), unique("g")
    await admin.create_topics([NewTopic(topic, 6, 3)])
    async with (
        member(bootstrap, group, client_id="ours-a") as a,
        member(bootstrap, group, client_id="ours-b", group_instance_id="static-b") as b,
    ):
        a.subscribe([topic])
        b.subscribe([topic])
        with anyio.fail_after(40):
            await eventually(lambda: len(a.assignment()) == 3 and len(b.assignment()) == 3)

        def run(*args: str) -> str:
            out: str = kafka_cluster.run_tool(GROUPS_TOOL, "--bootstrap-server", bootstrap, *args)
            return out

        members = await anyio.to_thread.run_sync(run, "--describe", "--group", group, "--members")
        state = await anyio.to_thread.run_sync(run, "--describe", "--group", group, "--state")
        rows = [line.split() for line in members.splitlines() if line.startswith(group)]
        by_id = {row[1]: row for row in rows}
        assert set(by_id) == {membership(a).member_id, membership(b).member_id}, members
        # GROUP CONSUMER-ID GROUP-INSTANCE-ID (blank if dynamic) HOST CLIENT-ID #PARTITIONS
        assert by_id[membership(a).member_id][2:] == ["/127.0.0.1", "ours-a", "3"], members
        assert by_id[membership(b).member_id][2:] == ["static-b", "/127.0.0.1", "ours-b", "3"], members
        [row] = [line.split() for line in state.splitlines() if line.startswith(group)]
        assert row[-3:] == ["uniform", "Stable", "2"], state
        listed = {g.group_id: g for g in await admin.list_consumer_groups()}
        assert (listed[group].group_type, listed[group].state) == ("consumer", "Stable")
        [described] = await admin.describe_consumer_groups([group])
        assert described.group_type == "consumer"
        assert {m.group_instance_id for m in described.members} == {None, "static-b"}
        assert {tp for m in described.members for tp in m.partitions} == a.assignment() | b.assignment()
    await admin.delete_topics([topic])


async def test_a_member_on_librdkafka_shares_the_group(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    import confluent_kafka

    bootstrap = kafka_cluster.bootstrap()
    topic, group = unique("kip848-mixed"), unique("g")
    await admin.create_topics([NewTopic(topic, 6, 3)])
    tps = [TopicPartition(topic, p) for p in range(6)]
    seen: dict[tuple[int, int], list[str]] = {}
    theirs: list[frozenset[TopicPartition]] = [frozenset()]  # replaced whole by the thread
    done = threading.Event()
    errors: list[Exception] = []

    transient = {confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART, confluent_kafka.KafkaError._UNKNOWN_TOPIC}

    def librdkafka_member() -> None:
        c = confluent_kafka.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "client.id": "rdkafka",
                "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": AUTO_COMMIT_MS,
            }
        )
        try:
            c.subscribe([topic])
            while not done.is_set():
                msg = c.poll(0.1)
                theirs[0] = frozenset(TopicPartition(tp.topic, tp.partition) for tp in c.assignment())
                if msg is None:
                    continue
                error = msg.error()
                if error is not None:
                    # a topic not yet in every broker's metadata is reported, then passes
                    if error.code() not in transient:
                        errors.append(confluent_kafka.KafkaException(error))
                    continue
                seen.setdefault((msg.partition(), msg.offset()), []).append("rdkafka")
        finally:
            c.close()

    stop = anyio.Event()
    with anyio.fail_after(120):
        # the consumer outlives the task group: the consume task is gone before it stops
        async with member(bootstrap, group, client_id="ours") as ours, anyio.create_task_group() as tg:
            tg.start_soon(produce_until, bootstrap, topic, 6, stop)
            ours.subscribe([topic])
            with anyio.fail_after(40):
                await eventually(lambda: len(ours.assignment()) == 6)

            async def consume() -> None:
                while True:
                    for tp, records in (await ours.getmany(timeout_ms=200)).items():
                        for r in records:
                            seen.setdefault((tp.partition, r.offset), []).append("ours")

            tg.start_soon(consume)
            tg.start_soon(anyio.to_thread.run_sync, librdkafka_member)
            with anyio.fail_after(60):
                await eventually(lambda: len(ours.assignment()) == 3 and len(theirs[0]) == 3)
            assert not ours.assignment() & theirs[0]
            stop.set()
            listed = await admin.list_offsets(dict.fromkeys(tps, -1))
            ends = {tp.partition: info.offset for tp, info in listed.items()}
            with anyio.fail_after(30):
                await eventually(lambda: all((p, end - 1) in seen for p, end in ends.items()))
            [described] = await admin.describe_consumer_groups([group])
            assert sorted(m.client_id for m in described.members) == ["ours", "rdkafka"]
            done.set()
            tg.cancel_scope.cancel()
    assert not errors, errors
    skipped = [(p, o) for p, end in ends.items() for o in range(end) if (p, o) not in seen]
    assert not skipped, skipped[:10]
    # our member committed what it had read before handing partitions over: nothing twice
    assert not {k: v for k, v in seen.items() if len(v) > 1}
    assert {who for v in seen.values() for who in v} == {"ours", "rdkafka"}
    await admin.delete_topics([topic])


async def test_static_member_restarted_within_the_session_keeps_its_partitions(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic, group = unique("kip848-static"), unique("g")
    await admin.create_topics([NewTopic(topic, 6, 3)])
    changes = Changes()
    async with member(bootstrap, group, client_id="dynamic") as other:
        other.subscribe([topic], listener=changes)
        static = member(bootstrap, group, group_instance_id="worker-1")
        await static.start()
        static.subscribe([topic])
        with anyio.fail_after(40):
            await eventually(lambda: len(other.assignment()) == 3 and len(static.assignment()) == 3)
        before, kept = set(static.assignment()), set(other.assignment())
        calls = len(changes.calls)
        await static.stop()  # leaves with epoch -2: its partitions wait for it
        # one heartbeat of the other member later (5 s at most, inside the 10 s session): after
        # a plain leave (-1) the broker would have given it all six partitions by now
        beats = membership(other).heartbeats
        with anyio.fail_after(30):
            await eventually(lambda: membership(other).heartbeats >= beats + 1)
        [described] = await admin.describe_consumer_groups([group])
        targets = {m.group_instance_id: m.target_partitions for m in described.members}
        assert targets == {None: frozenset(kept), "worker-1": frozenset(before)}
        again = member(bootstrap, group, group_instance_id="worker-1")
        await again.start()
        again.subscribe([topic])
        with anyio.fail_after(30):
            await eventually(lambda: again.assignment() == before)
        assert other.assignment() == kept and changes.calls[calls:] == []
        await again.stop()
    await admin.delete_topics([topic])


async def test_a_pattern_goes_to_the_broker_and_picks_up_a_new_topic(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    prefix = unique("kip848re")
    await admin.create_topics([NewTopic(f"{prefix}-a", 2, 3), NewTopic(f"{prefix}-other", 1, 3)])
    async with member(bootstrap, unique("g"), metadata_max_age_ms=1000) as c:
        c.subscribe(pattern=f"{prefix}-[ab]")
        with anyio.fail_after(40):
            await eventually(lambda: {tp.topic for tp in c.assignment()} == {f"{prefix}-a"})
        await admin.create_topics([NewTopic(f"{prefix}-b", 2, 3)])
        # the broker matches the regex (RE2/J) and assigns the new topic's partitions
        with anyio.fail_after(60):
            await eventually(lambda: {tp.topic for tp in c.assignment()} == {f"{prefix}-a", f"{prefix}-b"})
        assert len(c.assignment()) == 4
        [described] = await admin.describe_consumer_groups([membership(c).group_id])
        assert described.members[0].subscribed_topic_regex == f"{prefix}-[ab]"
    await admin.delete_topics([f"{prefix}-a", f"{prefix}-b", f"{prefix}-other"])
