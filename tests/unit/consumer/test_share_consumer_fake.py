"""The share consumer on the fake cluster: exact fault scenarios (lock expiry, session
errors, fencing, leader moves, the delivery-count limit), each bounded by ``DEADLINE``."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead.errors import (
    ClientClosedError,
    ClientFailedError,
    GroupAuthorizationFailedError,
    IllegalStateError,
    InvalidRecordStateError,
    KafkaConfigurationError,
    UnsupportedVersionError,
)
from aiokafka_lead.protocol.messages import ShareFetchResponse, ShareGroupHeartbeatResponse
from aiokafka_lead.share import AcknowledgeType, AIOKafkaShareConsumer, ShareConsumerRecord
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster, Respond
from aiokafka_lead.testing.fake.intercept import Delay
from aiokafka_lead.testing.fake.share_groups import State
from tests.support.waiting import eventually
from tests.unit.consumer.util import DEADLINE, produce

HEARTBEAT, SHARE_FETCH, SHARE_ACKNOWLEDGE = 76, 78, 79
SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH = 122, 123
GROUP_AUTHORIZATION_FAILED = 30
TP0 = TopicPartition("t", 0)


def share(fc: FakeCluster, group: str = "g", **kwargs: Any) -> AIOKafkaShareConsumer[bytes, bytes]:
    kwargs.setdefault("fetch_max_wait_ms", 100)
    kwargs.setdefault("retry_backoff_ms", 20)
    kwargs.setdefault("request_timeout_ms", 3000)
    return AIOKafkaShareConsumer("t", group_id=group, bootstrap_servers=fc.bootstrap, **kwargs)


async def take(c: AIOKafkaShareConsumer[bytes, bytes], count: int) -> list[ShareConsumerRecord[bytes, bytes]]:
    out: list[ShareConsumerRecord[bytes, bytes]] = []
    while len(out) < count:
        for records in (await c.getmany(timeout_ms=500)).values():
            out += records
    return out


@pytest.fixture
async def fc() -> Any:
    async with FakeCluster(brokers=2) as cluster:
        cluster.create_topic("t", 1, 2, leaders=[1])
        cluster.shares.configure("g", auto_offset_reset="earliest")
        yield cluster


async def test_records_flow_and_acknowledgements_ride_on_the_next_fetch(fc: FakeCluster) -> None:
    produce(fc, TP0, [b"a", b"b", b"c"])
    with anyio.fail_after(DEADLINE):
        async with share(fc) as c:
            got = await take(c, 3)
            assert [(r.offset, r.value, r.delivery_count) for r in got] == [
                (0, b"a", 1),
                (1, b"b", 1),
                (2, b"c", 1),
            ]
            await c.getmany(timeout_ms=0)  # implicit: accepts the three
            await fc.wait_for(lambda: fc.shares.groups["g"].partitions[("t", 0)].start_offset == 3)
            fetches = [r.request for r in fc.requests.select(api_key=SHARE_FETCH)]
            assert fetches[0].share_session_epoch == 0
            assert not fetches[0].topics[0].partitions[0].acknowledgement_batches
            acked = [
                (b.first_offset, b.last_offset, b.acknowledge_types)
                for f in fetches
                for t in f.topics
                for p in t.partitions
                for b in p.acknowledgement_batches
            ]
            assert acked == [(0, 2, [1])]
            assert fc.count(SHARE_ACKNOWLEDGE) == 0  # nothing needed a ShareAcknowledge


async def test_lock_expiry_gives_the_record_to_another_member(fc: FakeCluster) -> None:
    produce(fc, TP0, [b"job"])
    with anyio.fail_after(DEADLINE):
        async with share(fc, acknowledgement_mode="explicit") as holder:
            [held] = await take(holder, 1)
            # the holder stops fetching the partition (so it cannot take the record back)
            fc.shares.pin("g", holder.member_id, set())
            session = fc.shares.sessions[(1, "g", holder.member_id)]
            await fc.wait_for(lambda: not session.partitions)
            async with share(fc) as other:
                fc.shares.expire_locks("g")
                [again] = await take(other, 1)
                assert (again.offset, again.delivery_count) == (0, 2)
                holder.acknowledge(held, AcknowledgeType.ACCEPT)
                results = await holder.commit()  # a ShareAcknowledge: no fetch carries it
                assert isinstance(results[TP0], InvalidRecordStateError)
                assert fc.count(SHARE_ACKNOWLEDGE) == 1


async def test_delivery_count_limit_archives_the_record(fc: FakeCluster) -> None:
    fc.shares.configure("g", delivery_limit=2)
    produce(fc, TP0, [b"poison"])
    with anyio.fail_after(DEADLINE):
        async with share(fc, acknowledgement_mode="explicit") as c:
            for expected in (1, 2):
                [r] = await take(c, 1)
                assert r.delivery_count == expected
                c.acknowledge(r, AcknowledgeType.RELEASE)
                assert await c.commit() == {TP0: None}
            state = fc.shares.state_of("g", ("t", 0), 0)
            assert state is None or state.state is State.ARCHIVED
            assert fc.shares.groups["g"].partitions[("t", 0)].start_offset == 1


@pytest.mark.parametrize("code", [SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH])
async def test_a_session_error_reopens_the_session_and_keeps_the_acknowledgements(
    fc: FakeCluster, code: int
) -> None:
    produce(fc, TP0, [b"a", b"b"])
    with anyio.fail_after(DEADLINE):
        async with share(fc, max_poll_records=1, share_acquire_mode="record_limit") as c:
            [first] = await take(c, 1)
            fc.intercept(
                SHARE_FETCH,
                lambda node, header, request: (
                    Respond(ShareFetchResponse(error_code=code)) if request.share_session_epoch > 0 else None
                ),
            )
            [second] = await take(c, 1)  # accepts `first`: its ack meets the session error
            assert (first.offset, second.offset) == (0, 1)
            await c.getmany(timeout_ms=0)
            await fc.wait_for(lambda: fc.shares.groups["g"].partitions[("t", 0)].start_offset == 2)
            epochs = [r.request.share_session_epoch for r in fc.requests.select(api_key=SHARE_FETCH)]
            assert epochs.count(0) >= 2  # opened again after the error


async def test_a_lost_session_on_the_broker_is_opened_again(fc: FakeCluster) -> None:
    produce(fc, TP0, [b"a"])
    with anyio.fail_after(DEADLINE):
        async with share(fc) as c:
            await take(c, 1)
            fc.shares.drop_sessions()
            produce(fc, TP0, [b"b"])
            [r] = await take(c, 1)
            assert r.offset == 1


async def test_a_fenced_member_rejoins_at_epoch_zero(fc: FakeCluster) -> None:
    produce(fc, TP0, [b"a"])
    with anyio.fail_after(DEADLINE):
        async with share(fc) as c:
            await take(c, 1)
            assert await c.commit() == {TP0: None}
            fc.shares.expire_member("g", c.member_id)
            await eventually(lambda: c._member.fencings == 1 and c.member_epoch > 0)
            assert c.assignment() == {TP0}
            produce(fc, TP0, [b"b"])
            [r] = await take(c, 1)
            assert r.offset == 1
            joins = [r.request for r in fc.requests.select(api_key=HEARTBEAT) if r.request.member_epoch == 0]
            assert len(joins) == 2 and joins[0].member_id == joins[1].member_id


async def test_leader_move_is_followed_through_the_hint(fc: FakeCluster) -> None:
    produce(fc, TP0, [b"a"])
    with anyio.fail_after(DEADLINE):
        async with share(fc) as c:
            await take(c, 1)
            fc.move_leader(("t", 0), 2)
            produce(fc, TP0, [b"b"])
            [r] = await take(c, 1)
            assert r.offset == 1
            assert fc.count(SHARE_FETCH, node_id=2) >= 1


async def test_close_releases_delivered_and_buffered_records(fc: FakeCluster) -> None:
    produce(fc, TP0, [b"a", b"b", b"c"])
    with anyio.fail_after(DEADLINE):
        c = share(fc, acknowledgement_mode="explicit")
        await c.start()
        got = await c.getmany(timeout_ms=2000, max_records=1)
        assert [r.offset for rs in got.values() for r in rs] == [0]
        await c.close()
        states = [fc.shares.state_of("g", ("t", 0), o) for o in range(3)]
        assert [(s.state, s.delivery_count) for s in states if s is not None] == [(State.AVAILABLE, 1)] * 3
        closing = [r.request for r in fc.requests.select(api_key=SHARE_ACKNOWLEDGE)]
        assert [r.share_session_epoch for r in closing] == [-1]
        leaves = [r.request for r in fc.requests.select(api_key=HEARTBEAT) if r.request.member_epoch == -1]
        assert len(leaves) == 1


class InjectedFault(RuntimeError):
    pass


@pytest.mark.parametrize("task", ["fetcher", "heartbeat"])
async def test_a_failed_background_task_fails_every_call_with_its_cause(
    fc: FakeCluster, task: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fault matrix's rule (tests/unit/test_failure_containment.py) for the share consumer."""
    with anyio.fail_after(DEADLINE):
        async with share(fc) as c:
            await eventually(lambda: c.assignment() == {TP0})
            armed = anyio.Event()
            target, name = (c._fetcher, "_plan") if task == "fetcher" else (c._member, "_heartbeat")
            original = getattr(target, name)

            if task == "fetcher":

                def faulty_plan(*args: Any) -> Any:
                    if armed.is_set():
                        raise InjectedFault("injected into the share fetcher")
                    return original(*args)

                monkeypatch.setattr(target, name, faulty_plan)
            else:

                async def faulty_heartbeat() -> float:
                    if armed.is_set():
                        raise InjectedFault("injected into the share heartbeat")
                    result: float = await original()
                    return result

                monkeypatch.setattr(target, name, faulty_heartbeat)
            outcomes: dict[str, BaseException | None] = {}

            async def call(label: str, fn: Any) -> None:
                try:
                    await fn()
                except BaseException as exc:
                    outcomes[label] = exc

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "getmany", lambda: c.getmany(timeout_ms=60_000))
                tg.start_soon(call, "getone", c.getone)
                await anyio.wait_all_tasks_blocked()
                armed.set()
                c._fetcher.wake()
            for label in ("getmany", "getone"):
                assert isinstance(outcomes[label], ClientFailedError), outcomes
                assert isinstance(outcomes[label].__cause__, InjectedFault), outcomes
            with pytest.raises(ClientFailedError, match="injected"):
                await c.commit()
            with pytest.raises(ClientFailedError, match="injected"):
                async for _ in c:
                    pass


@pytest.mark.parametrize(
    ("ranges", "problem"),
    [
        ([(0, 2**62, 1)], "offsets acquired at once"),
        ([(5, 3, 1)], "empty or negative"),
        ([(0, 3, 1), (2, 4, 1)], "overlap"),
        ([(0, 0, 0)], "delivery count 0"),
    ],
)
async def test_impossible_acquired_ranges_are_refused(
    fc: FakeCluster, ranges: list[tuple[int, int, int]], problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    produce(fc, TP0, [b"a"])
    topic_id = fc.topics["t"].topic_id
    lie = ShareFetchResponse(
        acquisition_lock_timeout_ms=30_000,
        responses=[
            ShareFetchResponse.ShareFetchableTopicResponse(
                topic_id=topic_id,
                partitions=[
                    ShareFetchResponse.PartitionData(
                        partition_index=0,
                        records=fc.partition(("t", 0)).read(0, 2**20, at_least_one=True),
                        acquired_records=[
                            ShareFetchResponse.AcquiredRecords(
                                first_offset=f, last_offset=la, delivery_count=c
                            )
                            for f, la, c in ranges
                        ],
                    )
                ],
            )
        ],
    )
    fc.intercept(SHARE_FETCH, lambda node, header, request: Respond(lie))
    with anyio.fail_after(DEADLINE):
        async with share(fc) as c:
            [r] = await take(c, 1)  # the next, true answer
            assert (r.offset, r.delivery_count) == (0, 1)
    assert any(problem in m for m in caplog.messages), caplog.messages


async def test_start_against_brokers_without_share_groups_raises_a_clear_error() -> None:
    async with FakeCluster(brokers=1, max_versions={HEARTBEAT: 0}) as fc:
        fc.create_topic("t", 1, 1)
        c = share(fc)
        with anyio.fail_after(DEADLINE), pytest.raises(UnsupportedVersionError, match=r"share\.version"):
            await c.start()
        with pytest.raises(ClientClosedError):
            await c.getmany()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"group_id": ""}, "group_id must be a non-empty string"),
        ({"group_id": None}, "group_id must be a non-empty string"),
        ({"acknowledgement_mode": "auto"}, "acknowledgement_mode must be one of"),
        ({"share_acquire_mode": "strict"}, "share_acquire_mode must be one of"),
        ({"max_poll_records": 0}, "max_poll_records must be a positive int"),
        ({"max_poll_records": 2.5}, "max_poll_records must be a positive int"),
        ({"fetch_max_wait_ms": -1}, "fetch_max_wait_ms must be >= 0"),
        ({"fetch_min_bytes": 10, "fetch_max_bytes": 5}, "fetch_min_bytes must not exceed fetch_max_bytes"),
    ],
)
def test_bad_settings_are_refused_at_construction(kwargs: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"group_id": "g", **kwargs}
    with pytest.raises(KafkaConfigurationError, match=message):
        AIOKafkaShareConsumer("t", **settings)


def test_a_share_consumer_needs_a_group_and_names_unknown_keywords() -> None:
    with pytest.raises(KafkaConfigurationError, match="a share consumer always belongs to a share group"):
        AIOKafkaShareConsumer("t")
    unknown = r"unsupported share consumer options: group \(did you mean group_id\?\)"
    with pytest.raises(TypeError, match=unknown):
        AIOKafkaShareConsumer("t", group="g")


async def test_renew_needs_explicit_mode_and_subscribe_needs_names(fc: FakeCluster) -> None:
    produce(fc, TP0, [b"a"])
    with anyio.fail_after(DEADLINE):
        async with share(fc) as c:
            [r] = await take(c, 1)
            with pytest.raises(IllegalStateError, match="RENEW needs acknowledgement_mode='explicit'"):
                c.acknowledge(r, AcknowledgeType.RENEW)
            with pytest.raises(TypeError, match="not one string"):
                c.subscribe("t")
            with pytest.raises(ValueError, match="at least one topic"):
                c.subscribe([])


async def test_a_fatal_heartbeat_answer_reaches_the_application_and_stops_the_heartbeats(
    fc: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    with anyio.fail_after(DEADLINE):
        async with share(fc) as c:
            fc.intercept(
                HEARTBEAT,
                lambda *_: Respond(ShareGroupHeartbeatResponse(error_code=GROUP_AUTHORIZATION_FAILED)),
            )
            with pytest.raises(GroupAuthorizationFailedError):
                while True:
                    await c.getmany(timeout_ms=100)
            sent = len(fc.requests.select(api_key=HEARTBEAT))
            await anyio.sleep(0.3)
            assert len(fc.requests.select(api_key=HEARTBEAT)) == sent
    assert "share group g: GroupAuthorizationFailedError" in caplog.text
    assert "heartbeats stop until the next subscribe()" in caplog.text


def _carries_acks(request: Any) -> bool:
    return any(p.acknowledgement_batches for t in request.topics for p in t.partitions)


async def test_an_acknowledgement_refused_on_a_fetch_reaches_commit(fc: FakeCluster) -> None:
    """An acknowledgement riding on a ShareFetch that the broker refuses for its partition
    (the record's lock expired and another member holds it): commit() returns the error."""
    produce(fc, TP0, [b"job"])
    with anyio.fail_after(DEADLINE):
        async with share(fc, acknowledgement_mode="explicit") as holder:
            [held] = await take(holder, 1)
            # the fetch carrying the acknowledgement waits at the broker a while
            fc.intercept(SHARE_FETCH, lambda n, h, r: Delay(2.0) if _carries_acks(r) else None)
            holder.acknowledge(held, AcknowledgeType.ACCEPT)
            await fc.wait_for(
                lambda: any(_carries_acks(x.request) for x in fc.requests.select(api_key=SHARE_FETCH))
            )
            results: dict[TopicPartition, Any] = {}
            committed = anyio.Event()

            async def commit() -> None:
                results.update(await holder.commit())  # the acknowledgement is riding: wait for it
                committed.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(commit)
                async with share(fc) as other:  # meanwhile the lock expires, another member takes it
                    fc.shares.expire_locks("g")
                    [again] = await take(other, 1)
                    assert (again.offset, again.delivery_count) == (0, 2)
                    await committed.wait()  # while the other member holds the record
                    assert fc.count(SHARE_ACKNOWLEDGE) == 0  # it went with the fetch
            assert isinstance(results[TP0], InvalidRecordStateError), results
