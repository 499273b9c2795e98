"""The sender is woken only when its next pass can send something.

While natural batching holds a node (a request to it is out, or on a far link its newest
request is younger than the pipelining threshold: lanes.py), a new batch for that node waits
anyway: waking the sender for it would only run a pass that sends nothing. Such a batch
wakes it when the hold ends; the end of a request wakes it only when that changes what it
can send.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import anyio
import pytest

from aiokafka_lead.metadata import BrokerNode
from aiokafka_lead.producer import AIOKafkaProducer, DeliveryHandle
from aiokafka_lead.producer.accumulator import RecordAccumulator
from aiokafka_lead.producer.config import ProducerConfig
from aiokafka_lead.producer.sender import Sender
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Delay
from tests.support.far import far_link

PRODUCE = 0
TP = TopicPartition("t", 0)
NODE = BrokerNode(1, "localhost", 9092)


def accumulator() -> RecordAccumulator:
    acc = RecordAccumulator(ProducerConfig.build({"bootstrap_servers": "localhost:9092"}))
    acc.hold({}, lambda tp: NODE)
    return acc


def append(acc: RecordAccumulator, tp: TopicPartition = TP) -> None:
    assert acc.append_now(tp, 0, None, b"v", [], 100) is not None


def woken(acc: RecordAccumulator) -> bool:
    return acc._wakeup.is_set()


async def test_a_new_batch_for_a_node_held_until_a_request_ends_does_not_wake() -> None:
    acc = accumulator()
    acc.hold({NODE.node_id: math.inf}, lambda tp: NODE)
    append(acc)
    assert not woken(acc)
    assert acc.request_ended(NODE.node_id, None)  # no longer held: the batch may go
    assert not woken(acc)  # the caller passes at once (Sender._pass_now)


async def test_a_new_batch_for_a_node_held_for_a_while_wakes_when_the_hold_ends() -> None:
    acc = accumulator()
    until = time.monotonic() + 0.1
    acc.hold({NODE.node_id: until}, lambda tp: NODE)
    append(acc)
    assert not woken(acc)
    with anyio.fail_after(5):
        await acc.wait_for_work(None)
    assert time.monotonic() >= until - 0.005


@pytest.mark.parametrize("case", ["not held", "queued behind another", "flushing"])
async def test_a_new_batch_wakes_at_once_when_it_can_go(case: str) -> None:
    acc = accumulator()
    acc.hold({} if case == "not held" else {NODE.node_id: math.inf}, lambda tp: NODE)
    if case == "queued behind another":
        append(acc)
        acc._queues[TP][-1].close()  # full: the next record opens a second batch
        acc._wakeup.clear()
    if case == "flushing":
        acc._flushing = 1
    append(acc)
    assert woken(acc)


async def test_the_end_of_a_request_wakes_only_when_it_changes_what_can_go() -> None:
    acc = accumulator()
    until = time.monotonic() + 30
    acc.hold({NODE.node_id: until}, lambda tp: NODE)
    append(acc)  # held for the node
    assert not acc.request_ended(NODE.node_id, until)  # still held as long: a pass would send nothing
    assert not woken(acc)
    assert not acc.request_ended(NODE.node_id, until + 1)
    assert not woken(acc)
    assert not acc.request_ended(NODE.node_id, time.monotonic() - 1)  # a hold that ends sooner: then
    assert woken(acc)


async def test_the_end_of_a_request_with_nothing_held_for_its_node_does_not_wake() -> None:
    acc = accumulator()
    acc.hold({NODE.node_id: math.inf}, lambda tp: NODE)
    assert not acc.request_ended(NODE.node_id, None)
    assert not woken(acc)
    append(acc)  # the node is no longer held: a new batch wakes at once
    assert woken(acc)


async def test_the_end_of_a_request_a_queued_batch_waited_for_wakes() -> None:
    acc = accumulator()
    until = time.monotonic() + 30
    acc._waits_for_end = {NODE.node_id}
    acc.hold({NODE.node_id: until}, lambda tp: NODE)
    assert acc.request_ended(NODE.node_id, until)


async def test_a_resolved_batch_that_never_flew_wakes_the_sender() -> None:
    acc = accumulator()
    append(acc)
    acc._wakeup.clear()
    batch = acc._queues[TP].popleft()
    acc.finished(batch)
    assert woken(acc)


@pytest.mark.parametrize("far", [False, True])
async def test_a_steady_load_runs_few_sender_passes_that_send_nothing(
    far: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records every 2 ms to one partition; each produce takes 20 ms (a far link: pipelined)
    or is answered at once (near). Passes that sent nothing stay a small share of the passes."""
    passes = {"sent": 0, "empty": 0}
    drain = RecordAccumulator.drain

    def counting(self: RecordAccumulator, *args: Any, **kwargs: Any) -> Any:
        result = drain(self, *args, **kwargs)
        passes["sent" if result.by_node else "empty"] += 1
        return result

    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1)
            if far:
                fc.intercept(PRODUCE, lambda *_: Delay(0.02), times=None)
                far_link(fc)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, linger_ms=0) as producer:
                for _ in range(40):  # the link's speed is learnt (far after 32 slow requests)
                    await producer.send_and_wait("t", b"warm", partition=0)
                monkeypatch.setattr(RecordAccumulator, "drain", counting)
                handles = []
                for _ in range(200):
                    handles.append(await producer.send("t", b"v", partition=0))
                    await anyio.sleep(0.002)
                for handle in handles:
                    await handle
    assert passes["sent"] > 0
    # before the sender was woken only when it could send, every send() during a hold ran a
    # pass of its own: here over 100 that sent nothing
    assert passes["empty"] <= max(10, passes["sent"] // 4), passes


async def test_batches_held_for_a_request_go_where_its_answer_is_handled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch held while its node had a request out is sent by the handling of that
    request's answer, not one event-loop turn later by a woken sender."""
    sent_when_answered: list[bool] = []
    on_answer = Sender._on_answer

    with anyio.fail_after(30):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2, replication_factor=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, linger_ms=0) as producer:
                await producer.send_and_wait("t", b"warm", partition=0)
                arrived = anyio.Event()

                def slow(*_: Any) -> Delay:
                    arrived.set()
                    return Delay(0.2)

                fc.intercept(PRODUCE, slow)
                held: DeliveryHandle | None = None

                def answered(self: Sender, *args: Any) -> None:
                    on_answer(self, *args)
                    sent_when_answered.append(held is not None and held._target().sent)

                monkeypatch.setattr(Sender, "_on_answer", answered)
                first = await producer.send("t", b"a", partition=0)
                await arrived.wait()  # the first request is out
                held = await producer.send("t", b"b", partition=1)  # its node is busy: held
                await anyio.sleep(0.01)
                assert not held._target().sent
                await first
                await held
    assert sent_when_answered[0] is True


async def test_a_pass_run_by_an_answer_hands_a_request_that_needs_a_task_to_the_sender(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pass that an answer runs is a loop callback, where no task can be started: a
    request that must wait (here for a connection to its node, not opened yet) is started by
    the sender's loop instead, and its record is delivered."""
    senders: list[Sender] = []
    run = Sender.run

    async def recording(self: Sender, **kwargs: Any) -> None:
        senders.append(self)
        await run(self, **kwargs)

    monkeypatch.setattr(Sender, "run", recording)
    with anyio.fail_after(30):
        # four nodes: the bootstrap's, InitProducerId's and partition 0's leader leave one
        # without a connection at least
        async with FakeCluster(brokers=4) as fc:
            fc.create_topic("t", partitions=4, replication_factor=1, leaders=[1, 2, 3, 4])
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, linger_ms=0) as producer:
                await producer.send_and_wait("t", b"warm", partition=0)
                pool = producer._core.pool
                cold = [p for p in (1, 2, 3) if pool.live(p + 1) is None]  # leaders of 1 to 3
                assert cold, "every node already has a connection"
                tp = TopicPartition("t", cold[0])
                placed: list[Any] = []
                passed = anyio.Event()

                def answer_handled() -> None:  # as an answer's pass runs: a loop callback
                    placed.append(producer._acc.append_now(tp, 0, None, b"v", [], 100))
                    senders[0]._pass_now()
                    passed.set()

                asyncio.get_running_loop().call_soon(answer_handled)
                await passed.wait()
                handle, _ = placed[0]
                metadata = await handle
    assert metadata.topic_partition == tp


class _OneLeaderStore:
    """The part of the metadata store drain() reads: every partition led by NODE."""

    last_refresh = 0.0

    def leader_for(self, tp: tuple[str, int]) -> BrokerNode:
        return NODE

    def leader_epoch(self, tp: TopicPartition) -> int:
        return 1

    def request_refresh(self, reason: str) -> None:
        raise AssertionError(reason)


def test_a_retry_to_a_node_taking_one_request_at_a_time_goes_in_its_next_request() -> None:
    acc = accumulator()
    store: Any = _OneLeaderStore()
    append(acc, TP)
    (retry,) = acc.drain(store, 1 << 20, hints=True).by_node[NODE.node_id]
    retry.attempts, retry.retry_at = 1, time.monotonic() + 60  # backed off, leader unmoved
    acc.requeue(retry)
    one_at_a_time = {NODE.node_id: math.inf}
    ahead = {NODE.node_id: time.monotonic() + 60}  # a far node: requests pipeline after that
    assert not acc.drain(store, 1 << 20, hints=True, busy_nodes=one_at_a_time).by_node  # backoff
    retry.retry_at = 0.0
    assert not acc.drain(store, 1 << 20, hints=True, busy_nodes=one_at_a_time).by_node
    assert NODE.node_id in acc._held_for  # the end of the node's request runs a pass for it
    full = TopicPartition("t", 1)
    append(acc, full)
    acc._queues[full][0].close()  # full: it goes to the busy node at once
    sent = acc.drain(store, 1 << 20, hints=True, busy_nodes=one_at_a_time).by_node[NODE.node_id]
    assert [b.tp for b in sent] == [full, TP]  # the retry joins the request that goes anyway
    again = TopicPartition("t", 2)
    append(acc, again)
    (retry_2,) = acc.drain(store, 1 << 20, hints=True).by_node[NODE.node_id]
    retry_2.attempts = 1
    acc.requeue(retry_2)
    assert acc.drain(store, 1 << 20, hints=True, busy_nodes=ahead).by_node[NODE.node_id] == [retry_2]
