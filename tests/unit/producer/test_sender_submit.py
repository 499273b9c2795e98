"""How the sender sends a produce request: written at once on a live, free connection with
its answer handled where it arrives (Connection.submit), by a task otherwise; a node's
requests never overtake one another on the wire; a failure while handling an answer is the
producer's failure; an answer read as written that leaves a partition out retries it."""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.errors import ClientFailedError
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.producer.sender import Sender
from aiokafka_lead.protocol.messages import ProduceResponse
from aiokafka_lead.protocol.produce_wire import Written
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Delay, Respond

DEADLINE = 20
PRODUCE = 0


class Ways:
    """Counts how produce requests went: ``submitted``, ``declined`` (by the connection) and
    ``task``; ``decline`` makes the connection decline that many more."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: Counter[str] = Counter()
        self.decline = 0
        submit, produce = Connection.submit, Sender._produce

        def counted_submit(conn: Connection, *args: Any, **kwargs: Any) -> bool:
            if self.decline:
                self.decline -= 1
                self.counts["declined"] += 1
                return False
            sent = submit(conn, *args, **kwargs)
            self.counts["submitted" if sent else "declined"] += 1
            return sent

        async def counted_produce(sender: Sender, *args: Any, **kwargs: Any) -> None:
            self.counts["task"] += 1
            await produce(sender, *args, **kwargs)

        monkeypatch.setattr(Connection, "submit", counted_submit)
        monkeypatch.setattr(Sender, "_produce", counted_produce)

    def since(self, before: Counter[str]) -> dict[str, int]:
        return {k: v for k, v in (self.counts - before).items() if v}


async def test_on_a_live_connection_each_request_is_written_at_once_and_answered_without_a_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ways = Ways(monkeypatch)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                await producer.send_and_wait("t", b"warm-up", partition=0)
                before = Counter(ways.counts)
                offsets = [(await producer.send_and_wait("t", b"v", partition=p)).offset for p in (0, 1) * 3]
                assert ways.since(before) == {"submitted": 6}
                assert offsets == [1, 0, 2, 1, 3, 2]


async def test_while_a_request_to_a_node_goes_by_task_its_next_requests_do_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request written by a task may be written later than one submitted after it: the node's
    requests would overtake each other on the wire (and an idempotent partition's sequence
    numbers with them)."""
    ways = Ways(monkeypatch)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2)
            # one connection to the node, and batches full at once, so that the second request
            # goes while the first is out (a node's free batches wait for its answer)
            async with AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap, connections_per_broker=1, max_batch_size=64
            ) as producer:
                await producer.send_and_wait("t", b"warm-up", partition=0)
                before = Counter(ways.counts)
                ways.decline = 1
                fc.intercept(PRODUCE, lambda *_: Delay(0.5), times=1)  # the task's request is held
                first = await producer.send("t", b"a" * 100, partition=0)
                await fc.wait_for(lambda: ways.counts["task"] > before["task"])
                # two batches of partition 1: the first, closed, may go while the node is busy
                second = [await producer.send("t", b"b" * 100, partition=1) for _ in range(2)]
                await fc.wait_for(lambda: ways.counts["task"] >= before["task"] + 2)
                assert not first.done()  # still held by the broker
                assert ways.since(before) == {"declined": 1, "task": 2}  # not submitted past it
                assert [(await h).offset for h in second] == [0, 1] and (await first).offset == 1
                # nothing by task is left: the next one is submitted again
                again = Counter(ways.counts)
                await producer.send_and_wait("t", b"c", partition=1)
                assert ways.since(again) == {"submitted": 1}


async def test_a_failure_while_handling_an_answer_fails_the_producer_with_its_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = RuntimeError("handling broke")
    answered = Sender._answered
    armed = False

    def failing(sender: Sender, *args: Any) -> None:
        if armed:
            raise broken
        answered(sender, *args)

    monkeypatch.setattr(Sender, "_answered", failing)
    ways = Ways(monkeypatch)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                await producer.send_and_wait("t", b"warm-up")
                armed = True
                before = Counter(ways.counts)
                with pytest.raises(ClientFailedError, match="handling broke") as caught:
                    await producer.send_and_wait("t", b"v")
                assert caught.value.cause is broken
                assert ways.since(before) == {"submitted": 1}
                with pytest.raises(ClientFailedError, match="handling broke"):
                    await producer.send("t", b"later")


async def test_a_written_answer_that_leaves_out_a_partition_retries_that_batch() -> None:
    """An answer that says "written" but does not name the request's partition (read by the
    C call as all written, with no row for it): the batch goes the generated way, fails as
    unanswered and is retried; the record is stored once and its send() gets the offset."""
    nameless = ProduceResponse.TopicProduceResponse(name="t", partition_responses=[])
    silent = ProduceResponse(responses=[nameless])
    answers: list[Any] = []
    answered = Sender._answered

    def seen(sender: Sender, node_id: int, batches: Any, response: Any, latency: float) -> None:
        answers.append(response)
        answered(sender, node_id, batches, response, latency)

    with anyio.fail_after(DEADLINE), pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(Sender, "_answered", seen)
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                await producer.send_and_wait("t", b"warm-up")
                fc.intercept(PRODUCE, lambda *_: Respond(silent))
                metadata = await producer.send_and_wait("t", b"v")
                assert metadata.offset == 1
                assert producer.metrics()["batches_retried"] == 1
            assert [r[2] for r in fc.records(("t", 0))] == [b"warm-up", b"v"]
    assert isinstance(answers[1], Written) and answers[1].rows == []  # the C call read it
