"""Regressions found by the chaos tests (tests/integration/test_chaos.py), replayed without
a real cluster (on the in-process fake cluster where a broker is needed)."""

from __future__ import annotations

import uuid

import anyio
import anyio.abc
import anyio.lowlevel
import pytest

from aiokafka_lead.errors import KafkaConnectionError
from aiokafka_lead.runtime import ClientFailedError, TaskGroupHost
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import Close, FakeCluster
from tests.support.waiting import eventually
from tests.unit.consumer.util import DEADLINE, OFFSET_FOR_LEADER_EPOCH, consume, consumer, produce

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


async def test_failed_position_validation_backs_off_instead_of_killing_the_consumer() -> None:
    """A broker that drops the connection during OffsetForLeaderEpoch (KIP-320 validation
    after a leader move; a SIGKILLed broker does this) must cost a retry, not the consumer:
    the per-node validation tasks ran in a task group whose ExceptionGroup escaped the
    ``except KafkaError`` and ended the fetcher, so every later getmany() raised
    ClientClosedError."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=2, leaders=[1, 1])
            produce(fc, TP0, [b"a0"])
            produce(fc, TP1, [b"a1"])
            async with consumer(fc) as c:
                c.assign([TP0, TP1])
                assert sorted(r.value for r in await consume(c, 2)) == [b"a0", b"a1"]
                mark = fc.now()
                # every partition moves: both positions need validating, on two nodes
                fc.intercept(OFFSET_FOR_LEADER_EPOCH, lambda node_id, header, request: Close(), times=2)
                fc.move_leader(TP0, 2, hint="current")
                fc.move_leader(TP1, 3, hint="current")
                produce(fc, TP0, [b"b0"])
                produce(fc, TP1, [b"b1"])
                await eventually(lambda: fc.count(OFFSET_FOR_LEADER_EPOCH, since=mark) >= 3)
                records = await consume(c, 2)
                assert sorted(r.value for r in records) == [b"b0", b"b1"]
                assert {r.leader_epoch for r in records} == {1}


async def test_a_client_whose_background_task_died_says_so() -> None:
    """Every call after a background task failed raises ClientFailedError naming the cause,
    not a misleading "is not started (call start() ...)" while the real error waits for
    stop()."""

    async def crash(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        task_status.started()
        await anyio.lowlevel.checkpoint()
        raise KafkaConnectionError("connect to 127.0.0.1:1 failed")

    async def setup(tg: anyio.abc.TaskGroup) -> None:
        await tg.start(crash)

    host = TaskGroupHost("consumer")
    with anyio.fail_after(DEADLINE):
        await host.start(setup)
        await eventually(lambda: not host.running)
        with pytest.raises(ClientFailedError, match="background task raised KafkaConnectionError") as info:
            host.require_running()
        assert info.value.__cause__ is host.failure()
        assert isinstance(host.failure(), KafkaConnectionError)
        await host.stop()  # returns: the failure was reported to every call
        with pytest.raises(ClientFailedError):
            host.require_running()


def test_cluster_ids_never_start_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found while re-running the chaos tests: a session whose random cluster id began with
    "-" could not format its storage (``kafka-storage format -t -JpYs...``)."""
    from aiokafka_lead.testing.cluster import cluster as cluster_module

    dash_first = uuid.UUID(bytes=b"\xf8" + bytes(15))  # base64 "-A..."
    values = iter([dash_first, uuid.UUID(int=0)])
    monkeypatch.setattr(cluster_module.uuid, "uuid4", lambda: next(values))
    assert cluster_module._new_cluster_id() == "A" * 22
