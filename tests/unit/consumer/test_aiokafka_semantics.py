"""The consumer behaves as aiokafka's does where code written for aiokafka can tell:
start() joins the group, the listener's calls, stop semantics, "latest" after start(),
pattern matching and argument checks (on the fake cluster; tests/parity compares both
clients on a real one)."""

from __future__ import annotations

import gc
import re
import warnings
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka_lead.consumer.errors import ConsumerStoppedError, IllegalStateError
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import InvalidSessionTimeoutError
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Error
from tests.support.waiting import eventually
from tests.unit.consumer.util import DEADLINE, consumer, produce

JOIN_GROUP = 11


class Calls(ConsumerRebalanceListener):
    def __init__(self, consumer: AIOKafkaConsumer[Any, Any] | None = None) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []
        self.consumer = consumer

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", revoked))
        if self.consumer is not None and revoked:
            await self.consumer.commit()  # the usual pattern: commit before giving partitions up

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", assigned))


def group_consumer(fc: FakeCluster, *topics: str, **kwargs: Any) -> AIOKafkaConsumer[bytes, bytes]:
    kwargs.setdefault("group_id", "g")
    kwargs.setdefault("heartbeat_interval_ms", 50)
    kwargs.setdefault("session_timeout_ms", 6000)
    return AIOKafkaConsumer(*topics, bootstrap_servers=fc.bootstrap, retry_backoff_ms=20, **kwargs)


async def test_start_returns_with_the_assignment_and_positions_in_place() -> None:
    tps = {TopicPartition("t", 0), TopicPartition("t", 1)}
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            produce(fc, TopicPartition("t", 0), [b"old"])
            c = group_consumer(fc, "t", auto_offset_reset="latest", enable_auto_commit=False)
            await c.start()
            try:
                assert c.assignment() == tps
                assert await c.position(TopicPartition("t", 0), timeout_ms=0.001) == 1
                # "latest" was resolved inside start(): a record written now is delivered
                produce(fc, TopicPartition("t", 0), [b"new"])
                record = await c.getone()
                assert (record.value, record.offset) == (b"new", 1)
                await c.commit()
                assert await c.committed(TopicPartition("t", 0)) == 2
            finally:
                await c.stop()


async def test_a_join_error_is_raised_by_start() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            fc.intercept(JOIN_GROUP, lambda *_: Error(ErrorCode.INVALID_SESSION_TIMEOUT), times=None)
            c = group_consumer(fc, "t")
            with pytest.raises(InvalidSessionTimeoutError):
                await c.start()
            await c.stop()  # a no-op after the failed start


async def test_listener_hears_revoked_empty_first_and_nothing_at_stop() -> None:
    tp = TopicPartition("t", 0)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            c = group_consumer(fc, enable_auto_commit=False)
            listener = Calls(c)
            c.subscribe(["t"], listener=listener)
            await c.start()
            assert listener.calls == [("revoked", set()), ("assigned", {tp})]
            await c.stop()  # the listener's commit would fail here if it were called
            assert listener.calls == [("revoked", set()), ("assigned", {tp})]


async def test_a_failing_listener_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            raise RuntimeError("user bug")

    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            c = group_consumer(fc)
            c.subscribe(["t"], listener=Broken())
            await c.start()
            assert c.assignment() == {TopicPartition("t", 0)}
            await c.stop()
    assert "user bug" in caplog.text


async def test_a_pattern_matches_from_the_start_of_the_name() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("topic-a", partitions=1)
            fc.create_topic("other", partitions=1)
            produce(fc, TopicPartition("topic-a", 0), [b"x"])
            async with consumer(fc) as c:
                c.subscribe(pattern="topic")
                record = await c.getone()
                assert record.topic == "topic-a"
                assert c.subscription() == {"topic-a"}


async def test_a_getmany_waiting_at_stop_returns_empty_and_async_for_ends() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            c = consumer(fc)
            await c.start()
            c.assign([TopicPartition("t", 0)])
            got: dict[str, Any] = {}

            async def poll() -> None:
                got["getmany"] = await c.getmany(timeout_ms=30_000)

            async def iterate() -> None:
                got["iterated"] = [r async for r in c]

            async with anyio.create_task_group() as tg:
                tg.start_soon(poll)
                tg.start_soon(iterate)
                await anyio.sleep(0.2)  # both are waiting for records that never come
                await c.stop()
            assert got == {"getmany": {}, "iterated": []}
            with pytest.raises(ConsumerStoppedError):
                async for _ in c:
                    pass
            with pytest.raises(ConsumerStoppedError):
                await c.getmany()


async def test_bad_arguments_raise_aiokafkas_errors() -> None:
    tp = TopicPartition("t", 0)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            async with consumer(fc, group_id="g") as c:
                c.assign([tp])
                with pytest.raises(ValueError, match="positive integer"):
                    c.seek(tp, "")  # type: ignore[arg-type]
                with pytest.raises(ValueError, match="positive"):
                    await c.getmany(max_records=0)
                with pytest.raises(IllegalStateError, match="not assigned"):
                    await c.seek_to_committed(TopicPartition("t", 1))
                with pytest.raises(TypeError):
                    await c.seek_to_beginning(("t", 0))  # type: ignore[arg-type]
                with pytest.raises(IllegalStateError, match="not assigned"):
                    await c.commit({TopicPartition("t", 1): 5})
            fresh = consumer(fc)
            with pytest.raises(TypeError, match="either"):
                fresh.subscribe()
            with pytest.raises(TypeError, match="both"):
                fresh.subscribe(["t"], pattern="t")
            with pytest.raises(ValueError, match="not a valid pattern"):
                fresh.subscribe(pattern="(")
            fresh.subscribe(pattern=re.compile("t"))


async def test_unclosed_consumer_warns_and_loop_is_deprecated() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            with pytest.warns(DeprecationWarning, match="loop"):
                c = consumer(fc, loop=object())
            await c.start()
            await c._core.close()  # the background tasks end; the consumer was never stopped
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                del c
                gc.collect()
            assert any(issubclass(w.category, ResourceWarning) for w in caught)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                stopped = consumer(fc)
                await stopped.start()
                await stopped.stop()
                del stopped
                gc.collect()


async def test_last_poll_timestamp_follows_fetch_answers() -> None:
    import time

    tp = TopicPartition("t", 0)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            produce(fc, tp, [b"x"])
            async with consumer(fc) as c:
                c.assign([tp])
                assert c.last_poll_timestamp(tp) is None
                before = int(time.time() * 1000)
                await c.getone()
                stamp = c.last_poll_timestamp(tp)
                assert stamp is not None and before <= stamp <= int(time.time() * 1000)


async def test_start_under_none_leaves_the_missing_offset_to_the_first_poll() -> None:
    from aiokafka_lead.errors import NoOffsetForPartitionError

    tp = TopicPartition("t", 0)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            produce(fc, tp, [b"x", b"y"])
            c = group_consumer(fc, "t", auto_offset_reset="none", enable_auto_commit=False)
            await c.start()  # no committed offset: not start()'s error, the poll's
            try:
                assert c.assignment() == {tp}
                with pytest.raises(NoOffsetForPartitionError):
                    await c.getmany(timeout_ms=1000)
                c.seek(tp, 1)
                assert [r.value for r in (await c.getmany(tp, timeout_ms=5000))[tp]] == [b"y"]
            finally:
                await c.stop()


async def test_a_failed_start_leaves_no_resource_warning() -> None:
    c = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", request_timeout_ms=200, retry_backoff_ms=10)
    from aiokafka_lead.errors import KafkaConnectionError, KafkaTimeoutError

    with pytest.raises((KafkaConnectionError, KafkaTimeoutError)):  # nothing listens there
        await c.start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del c
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


async def test_position_after_seek_to_end_of_a_prefetched_partition() -> None:
    """tp1's records sit in the prefetch buffer while only tp0 is polled: its reset must
    still run (it waited for a poll of tp1 that never came)."""
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            produce(fc, tp0, [b"a", b"b"])
            produce(fc, tp1, [b"x", b"y", b"z"])
            async with consumer(fc) as c:
                c.assign([tp0, tp1])
                assert len((await c.getmany(tp0, timeout_ms=5000))[tp0]) == 2
                await eventually(lambda: tp1 in c.fetcher.buffer)
                await c.seek_to_end(tp1)
                assert await c.position(tp1, timeout_ms=3000) == 3


def test_a_client_dropped_without_stop_warns_even_if_never_started() -> None:
    from aiokafka_lead import AIOKafkaProducer

    for make in (
        lambda: AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1"),
        lambda: AIOKafkaProducer(bootstrap_servers="127.0.0.1:1"),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client = make()
            del client
            gc.collect()
        assert [w for w in caught if issubclass(w.category, ResourceWarning)], make
        with warnings.catch_warnings(record=True) as caught:  # a constructor that fails: nothing
            warnings.simplefilter("always")
            with pytest.raises(ValueError):
                AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", auto_offset_reset="middle")
            gc.collect()
        assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


async def test_shapes_of_assignment_subscription_and_seek_results() -> None:
    tp = TopicPartition("t", 0)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            produce(fc, tp, [b"a", b"b"])
            async with consumer(fc, group_id="g", enable_auto_commit=False) as c:
                assert c.assignment() == set() and type(c.assignment()) is set
                assert c.subscription() == set() and type(c.subscription()) is set
                with pytest.raises(IllegalStateError, match="Not subscribed"):
                    await c.commit()
                c.assign([tp])
                assert type(c.assignment()) is frozenset and c.assignment() == {tp}
                assert await c.seek_to_end(tp) is True
                assert await c.position(tp) == 2
                assert await c.seek_to_beginning() is True
                assert await c.position(tp) == 0


async def test_commit_before_the_first_assignment_is_refused() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            seen: list[str] = []

            class CommitEarly(ConsumerRebalanceListener):
                async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
                    try:
                        await c.commit()
                    except IllegalStateError as exc:
                        seen.append(str(exc))

            c = group_consumer(fc, enable_auto_commit=False)
            c.subscribe(["t"], listener=CommitEarly())
            await c.start()
            await c.stop()
            assert seen == ["No partitions assigned"]


async def test_bad_partitions_and_topics_are_refused_and_change_nothing() -> None:
    tp = TopicPartition("t", 0)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            async with consumer(fc) as c:
                c.assign([tp])
                with pytest.raises(ValueError, match="partition index"):
                    c.assign([TopicPartition("t", -1)])
                with pytest.raises(TypeError):
                    c.assign("t")  # type: ignore[arg-type]
                assert c.assignment() == {tp}
                c.assign([("t", 0)])  # a plain tuple is taken as a TopicPartition
                with pytest.raises(ValueError):
                    await c.offsets_for_times({tp: -5})
                with pytest.raises(TypeError):
                    await c.offsets_for_times({tp: 1.5})  # type: ignore[dict-item]
            fresh = consumer(fc)
            with pytest.raises(ValueError):
                fresh.subscribe(["bad name!"])
            assert fresh.subscription() == set()
