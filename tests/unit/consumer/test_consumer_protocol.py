"""KIP-848 consumer-protocol groups on the fake cluster: reconciliation, fencing, static
members, coordinator moves, stale-epoch commits, regex subscriptions.

The fake's assignor is deterministic (sticky per-topic quotas in join order, see
``testing/fake/consumer_groups.py``), so every assignment below is exact.
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.consumer import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka_lead.consumer.consumer_protocol import ConsumerGroupMember
from aiokafka_lead.consumer.coordinator import GroupCoordinator
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import KafkaError, UnreleasedInstanceIdError, UnsupportedVersionError
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition
from aiokafka_lead.testing.fake import Error, FakeCluster
from tests.support.waiting import eventually
from tests.unit.consumer.util import DEADLINE, consume, consumer, produce

HEARTBEAT, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 68, 8, 9, 10


class Recorder(ConsumerRebalanceListener):
    """Every callback in order, as (kind, partitions)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", assigned))

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.calls.append(("lost", lost))


def member(fc: FakeCluster, group: str = "g", **kwargs: Any) -> Any:
    kwargs.setdefault("enable_auto_commit", False)
    return consumer(fc, group_id=group, group_protocol="consumer", **kwargs)


def parts(topic: str, *ps: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in ps}


def heartbeats(fc: FakeCluster) -> list[Any]:
    return [r.request for r in fc.requests.select(api_key=HEARTBEAT)]


def group_member(c: Any) -> ConsumerGroupMember:
    assert isinstance(c.coordinator, ConsumerGroupMember)
    return c.coordinator


def test_classic_only_keywords_are_refused_under_the_consumer_protocol() -> None:
    def build(**kwargs: Any) -> Any:
        return AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", group_id="g", **kwargs)

    for kwargs in (
        {"session_timeout_ms": 10_000},
        {"heartbeat_interval_ms": 3000},
        {"partition_assignment_strategy": ["roundrobin"]},
    ):
        with pytest.raises(ValueError, match="cannot be set with group_protocol='consumer'"):
            build(group_protocol="consumer", **kwargs)
    with pytest.raises(ValueError, match="group_protocol must be one of"):
        build(group_protocol="eager")
    with pytest.raises(ValueError, match="group_remote_assignor needs group_protocol='consumer'"):
        build(group_remote_assignor="uniform")
    # the classic keywords stay valid under the classic protocol, as before
    assert isinstance(build(session_timeout_ms=6000, heartbeat_interval_ms=100).coordinator, GroupCoordinator)
    chosen = build(group_protocol="consumer", group_remote_assignor="range").coordinator
    assert isinstance(chosen, ConsumerGroupMember) and chosen._config.group_remote_assignor == "range"


async def test_join_sends_full_state_then_a_new_member_moves_only_what_it_takes() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=4)
            everything = parts("t", 0, 1, 2, 3)
            for tp in everything:
                produce(fc, tp, [b"a", b"b"])
            l1 = Recorder()
            async with member(fc, enable_auto_commit=True, auto_commit_interval_ms=60_000) as c1:
                c1.subscribe(["t"], listener=l1)
                await eventually(lambda: c1.assignment() == everything)
                first = heartbeats(fc)[0]
                m1 = group_member(c1)
                assert (first.member_epoch, first.member_id) == (0, m1.member_id)
                assert len(m1.member_id) == 22 and first.subscribed_topic_names == ["t"]
                assert first.rebalance_timeout_ms == 300_000 and first.topic_partitions == []
                assert await consume(c1, 8)  # positions at 2 everywhere
                async with member(fc) as c2:
                    l2 = Recorder()
                    c2.subscribe(["t"], listener=l2)
                    await eventually(lambda: c2.assignment() == parts("t", 2, 3))
                    await eventually(lambda: c1.assignment() == parts("t", 0, 1))
                    # c1 gave up exactly the two partitions that moved, after committing them,
                    # and only then did c2 get them: c2 starts at the committed offsets
                    assert l1.calls == [("assigned", everything), ("revoked", parts("t", 2, 3))]
                    assert l2.calls == [("assigned", parts("t", 2, 3))]
                    stored = fc.groups.groups["g"].offsets
                    assert {p: stored[("t", p)].offset for p in (2, 3)} == {2: 2, 3: 2}
                    for tp in everything:
                        produce(fc, tp, [b"c"])
                    got = await consume(c2, 2)
                    assert sorted((r.partition, r.offset) for r in got) == [(2, 2), (3, 2)]
                    assert fc.groups.consumer_groups["g"].state == "Stable"
                # c2 left with epoch -1: c1 takes its partitions back
                await eventually(lambda: c1.assignment() == everything)
            leaves = [h.member_epoch for h in heartbeats(fc) if h.member_epoch < 0]
            assert leaves == [-1, -1]
            assert not fc.groups.consumer_groups["g"].members


async def test_fenced_member_gives_everything_up_then_rejoins_with_the_same_id() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            listener = Recorder()
            async with member(fc) as c:
                c.subscribe(["t"], listener=listener)
                await eventually(lambda: c.assignment() == parts("t", 0, 1))
                m = group_member(c)
                member_id, epoch = m.member_id, m.member_epoch
                fc.intercept(HEARTBEAT, lambda *_: Error(E.FENCED_MEMBER_EPOCH))  # once
                await eventually(lambda: len(listener.calls) == 3)
                assert listener.calls == [
                    ("assigned", parts("t", 0, 1)),
                    ("lost", parts("t", 0, 1)),
                    ("assigned", parts("t", 0, 1)),
                ]
                rejoin = [h for h in heartbeats(fc) if h.member_epoch == 0]
                assert [h.member_id for h in rejoin] == [member_id, member_id]
                assert rejoin[1].topic_partitions == []  # nothing kept across the fencing
                assert m.member_epoch > epoch


async def test_session_expiry_unknown_member_rejoins_and_commits_carry_the_new_epoch() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            tp = TopicPartition("t", 0)
            produce(fc, tp, [b"a"])
            listener = Recorder()
            async with member(fc) as c:
                c.subscribe(["t"], listener=listener)
                await consume(c, 1)
                m = group_member(c)
                fc.groups.expire_member("g", m.member_id)
                await eventually(lambda: m.fencings == 1 and m.in_group and c.assignment() == {tp})
                assert ("lost", {tp}) in listener.calls
                await c.commit({tp: OffsetAndMetadata(1, "", -1)})
                commit = fc.requests.select(api_key=OFFSET_COMMIT)[-1].request
                assert commit.member_id == m.member_id
                assert commit.generation_id_or_member_epoch == m.member_epoch


async def test_commit_at_a_stale_epoch_is_retried_after_the_next_heartbeat() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.groups.consumer_heartbeat_interval_ms = 60_000  # no heartbeat unless one is asked for
            fc.create_topic("t", partitions=1)
            tp = TopicPartition("t", 0)
            async with member(fc) as c:
                c.subscribe(["t"])
                await eventually(lambda: c.assignment() == {tp})
                m = group_member(c)
                old = m.member_epoch
                # the broker moved the member to a new epoch; the answer saying so was lost
                state = fc.groups.consumer_groups["g"].members[m.member_id]
                state.previous_epoch, state.epoch = state.epoch, state.epoch + 5
                await c.commit({tp: OffsetAndMetadata(7, "", -1)})
                commits = [r.request for r in fc.requests.select(api_key=OFFSET_COMMIT)]
                assert [x.generation_id_or_member_epoch for x in commits] == [old, old + 5]
                assert fc.groups.groups["g"].offsets[("t", 0)].offset == 7
                assert m.member_epoch == old + 5


async def test_static_member_leaves_with_minus_two_and_gets_its_partitions_back() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            async with member(fc) as other:
                other.subscribe(["t"])
                await eventually(lambda: other.assignment() == parts("t", 0, 1))
                async with member(fc, group_instance_id="w1") as c:
                    c.subscribe(["t"])
                    await eventually(lambda: c.assignment() == parts("t", 1))
                    first_id = group_member(c).member_id
                assert [h.member_epoch for h in heartbeats(fc) if h.member_id == first_id][-1] == -2
                # the static member's partition waits for it: nobody else gets it meanwhile
                seen = fc.requests.count(api_key=HEARTBEAT)
                await fc.wait_for(lambda: fc.requests.count(api_key=HEARTBEAT) >= seen + 3)
                assert other.assignment() == parts("t", 0)
                async with member(fc, group_instance_id="w1") as again:
                    again.subscribe(["t"])
                    await eventually(lambda: again.assignment() == parts("t", 1))
                    assert group_member(again).member_id != first_id
                    assert other.assignment() == parts("t", 0)
                    # a second live member with the same instance id is refused, fatally
                    async with member(fc, group_instance_id="w1") as clash:
                        clash.subscribe(["t"])
                        with pytest.raises(UnreleasedInstanceIdError):
                            await clash.getmany(timeout_ms=2000)
                        assert clash.assignment() == set()


async def test_coordinator_move_is_followed_without_losing_the_membership() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.groups.consumer_heartbeat_interval_ms = 50
            fc.create_topic("t", partitions=2)
            async with member(fc) as c:
                c.subscribe(["t"])
                await eventually(lambda: c.assignment() == parts("t", 0, 1))
                m = group_member(c)
                old = m.coordinator_id
                new = next(n for n in (1, 2, 3) if n != old)
                finds = fc.count(FIND_COORDINATOR)
                fc.set_coordinator("g", new)
                await eventually(lambda: m.coordinator_id == new)
                await fc.wait_for(lambda: fc.requests.count(api_key=HEARTBEAT, node_id=new) >= 2)
                assert m.fencings == 0 and c.assignment() == parts("t", 0, 1)
                assert fc.count(FIND_COORDINATOR) - finds <= 2  # the member + maybe an offset look-up


async def test_regex_goes_to_the_broker_and_new_topics_are_assigned() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("orders-eu", partitions=1)
            fc.create_topic("payments", partitions=1)
            async with member(fc, metadata_max_age_ms=200) as c:
                c.subscribe(pattern="orders-.*")
                await eventually(lambda: c.assignment() == parts("orders-eu", 0))
                assert heartbeats(fc)[0].subscribed_topic_regex == "orders-.*"
                assert heartbeats(fc)[0].subscribed_topic_names is None
                fc.create_topic("orders-us", partitions=1)
                # the broker matches the new topic; the member resolves its id from metadata
                await eventually(lambda: c.assignment() == parts("orders-eu", 0) | parts("orders-us", 0))


async def test_v0_broker_gets_client_side_matched_names_and_assigns_the_member_id() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1, max_versions={HEARTBEAT: 0}) as fc:
            fc.create_topic("orders-eu", partitions=1)
            fc.create_topic("payments", partitions=1)
            async with member(fc, metadata_max_age_ms=200) as c:
                c.subscribe(pattern="orders-.*")
                await eventually(lambda: c.assignment() == parts("orders-eu", 0))
                first = heartbeats(fc)[0]
                assert (first.member_id, first.subscribed_topic_regex) == ("", None)
                assert group_member(c).member_id  # handed out by the broker
                fc.create_topic("orders-us", partitions=1)
                await eventually(lambda: c.assignment() == parts("orders-eu", 0) | parts("orders-us", 0))
                assert heartbeats(fc)[-1].subscribed_topic_names == ["orders-eu", "orders-us"]


async def test_member_that_stops_polling_leaves_and_rejoins_on_the_next_poll() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.groups.consumer_heartbeat_interval_ms = 50
            fc.create_topic("t", partitions=2)
            listener = Recorder()
            async with member(fc, max_poll_interval_ms=300) as c:
                c.subscribe(["t"], listener=listener)
                await c.getmany(timeout_ms=10)
                await eventually(lambda: c.assignment() == parts("t", 0, 1))
                await fc.wait_for(lambda: any(h.member_epoch == -1 for h in heartbeats(fc)))
                await eventually(lambda: not c.assignment())
                assert listener.calls[-1] == ("lost", parts("t", 0, 1))
                produce(fc, TopicPartition("t", 0), [b"after"])
                record = await c.getone()
                assert record.value == b"after"


async def test_admin_describes_a_consumer_group_with_its_members_and_assignments() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=3)
            async with (
                AdminClient(bootstrap_servers=fc.bootstrap) as admin,
                member(fc, group_instance_id="w1", client_id="first") as c1,
                member(fc, client_id="second") as c2,
            ):
                c1.subscribe(["t"])
                await eventually(lambda: len(c1.assignment()) == 3)
                c2.subscribe(["t"])
                await eventually(lambda: len(c1.assignment()) == 2 and len(c2.assignment()) == 1)
                await fc.wait_for(lambda: fc.groups.consumer_groups["g"].state == "Stable")
                [described] = await admin.describe_consumer_groups(["g"])
                assert (described.group_type, described.state, described.protocol) == (
                    "consumer",
                    "Stable",
                    "uniform",
                )
                by_client = {m.client_id: m for m in described.members}
                assert by_client["first"].group_instance_id == "w1"
                assert by_client["first"].partitions == frozenset(c1.assignment())
                assert by_client["second"].partitions == frozenset(c2.assignment())
                assert by_client["second"].target_partitions == frozenset(c2.assignment())
                assert by_client["second"].member_epoch == group_member(c2).member_epoch
                assert by_client["second"].subscribed_topics == ("t",)
                assert described.group_epoch >= by_client["second"].member_epoch


async def test_heartbeats_follow_the_interval_the_broker_sets() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.groups.consumer_heartbeat_interval_ms = 300
            fc.create_topic("t", partitions=1)
            async with member(fc) as c:
                c.subscribe(["t"])
                await eventually(lambda: bool(c.assignment()))
                # after the join and the heartbeat reporting the partition, the broker's pace
                await fc.wait_for(lambda: sum(1 for h in heartbeats(fc) if h.topic_partitions) >= 4)
                times = [r.time for r in fc.requests.select(api_key=HEARTBEAT) if r.request.topic_partitions]
                assert all(b - a >= 0.29 for a, b in itertools.pairwise(times)), times
                assert group_member(c).heartbeat_interval_s == 0.3


async def test_subscription_change_and_unsubscribe_then_subscribe_again() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.groups.consumer_heartbeat_interval_ms = 50
            fc.create_topic("a", partitions=2)
            fc.create_topic("b", partitions=1)
            listener = Recorder()
            async with member(fc) as c:
                c.subscribe(["a"], listener=listener)
                await eventually(lambda: c.assignment() == parts("a", 0, 1))
                c.subscribe(["b"], listener=listener)
                await eventually(lambda: c.assignment() == parts("b", 0))
                assert listener.calls[-2:] == [("revoked", parts("a", 0, 1)), ("assigned", parts("b", 0))]
                m = group_member(c)
                member_id = m.member_id
                c.unsubscribe()
                await fc.wait_for(lambda: heartbeats(fc)[-1].member_epoch == -1)
                await eventually(lambda: not m.in_group)
                assert not fc.groups.consumer_groups["g"].members
                c.subscribe(["a"], listener=listener)
                await eventually(lambda: c.assignment() == parts("a", 0, 1))
                sent = heartbeats(fc)
                after_leave = sent[[h.member_epoch for h in sent].index(-1) + 1]
                assert (after_leave.member_epoch, after_leave.member_id) == (0, member_id)


async def test_offset_fetch_carries_the_member_epoch_and_is_retried_when_it_is_stale() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.groups.consumer_heartbeat_interval_ms = 50
            fc.create_topic("t", partitions=2)
            tp1 = TopicPartition("t", 1)
            produce(fc, tp1, [b"a", b"b", b"c"])
            async with member(fc) as c1:
                c1.subscribe(["t"])
                await eventually(lambda: c1.assignment() == parts("t", 0, 1))
                await c1.commit({tp1: OffsetAndMetadata(2, "", -1)})
                first = group_member(c1).member_id

                def stale_once_for_the_new_member(node_id: int, header: Any, request: Any) -> Any:
                    stale = request.groups[0].member_id not in (None, first)
                    return Error(E.STALE_MEMBER_EPOCH) if stale else None

                fc.intercept(OFFSET_FETCH, stale_once_for_the_new_member)  # STALE_MEMBER_EPOCH
                async with member(fc) as c2:
                    c2.subscribe(["t"])
                    await eventually(lambda: c2.assignment() == {tp1})
                    [record] = await consume(c2, 1)
                    assert (record.offset, record.value) == (2, b"c")
                    m2 = group_member(c2)
                    fetches = [
                        g for r in fc.requests.select(api_key=OFFSET_FETCH) for g in r.request.groups
                        if g.member_id == m2.member_id
                    ]
                    assert len(fetches) == 2 and all(g.member_epoch > 0 for g in fetches)


async def test_a_broker_without_the_consumer_protocol_is_a_clear_error() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1, max_versions={HEARTBEAT: -1}) as fc:
            fc.create_topic("t", partitions=1)
            async with member(fc) as c:
                c.subscribe(["t"])
                with pytest.raises(KafkaError, match="use group_protocol='classic'"):
                    await c.getmany(timeout_ms=3000)
                assert fc.count(HEARTBEAT) == 0 and c.assignment() == set()


async def test_a_broker_that_advertises_but_does_not_run_the_consumer_protocol_is_a_clear_error() -> None:
    """Kafka 3.9 advertises ConsumerGroupHeartbeat v0 but answers UNSUPPORTED_VERSION."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            fc.intercept(HEARTBEAT, lambda node_id, header, request: Error(E.UNSUPPORTED_VERSION), times=None)
            async with member(fc) as c:
                c.subscribe(["t"])
                with pytest.raises(
                    UnsupportedVersionError, match=r"does not speak the consumer group protocol.*classic"
                ):
                    await c.getmany(timeout_ms=3000)
                assert fc.count(HEARTBEAT) == 1 and c.assignment() == set()


def test_consumer_protocol_member_runs_on_trio() -> None:
    async def scenario() -> tuple[list[bytes | None], int]:
        with anyio.fail_after(DEADLINE):
            async with FakeCluster(brokers=1) as fc:
                fc.create_topic("t", partitions=1)
                tp = TopicPartition("t", 0)
                produce(fc, tp, [b"a", b"b"])
                async with member(fc, enable_auto_commit=True) as c:
                    c.subscribe(["t"])
                    values = [r.value for r in await consume(c, 2)]
                    await c.commit()
                    committed = await c.committed(tp)
                return values, committed or -1

    assert anyio.run(scenario, backend="trio") == ([b"a", b"b"], 2)
