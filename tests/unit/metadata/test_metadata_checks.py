"""Metadata no real broker sends is refused where it is applied: the answer's other topics
and nodes still count, the refused topic is unusable until a valid answer comes, and the
error names the API, the broker and the field."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.errors import KafkaTimeoutError
from aiokafka_lead.metadata import (
    BrokerNode,
    MetadataSnapshot,
    MetadataStore,
    PartitionMetadata,
    TopicMetadata,
)
from aiokafka_lead.metadata.checks import node_problem, partitions_problem
from aiokafka_lead.protocol.messages import MetadataResponse
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster, Rewrite
from tests.support.loop_lag import watch_loop
from tests.unit.consumer.util import consume, consumer, produce

METADATA = 3
NODES = (BrokerNode(1, "h1", 9092),)
SOURCE = "Metadata v13 from node 1 (h1:9092)"


def topic(name: str, indexes: list[int]) -> TopicMetadata:
    parts = tuple(PartitionMetadata(name, i, 1, 0) for i in indexes)
    return TopicMetadata(name, rows=tuple(p.row for p in parts))


def snapshot(*topics: TopicMetadata, brokers: tuple[BrokerNode, ...] = NODES) -> MetadataSnapshot:
    return MetadataSnapshot(brokers=brokers, topics=topics, source=SOURCE)


@pytest.mark.parametrize(
    ("indexes", "field"),
    [
        ([2**31 - 1], "partition_index 2147483647 is out of range"),
        ([-1], "partition_index -1 is out of range"),
        ([0, 5], "partition_index 5 is out of range"),
        ([0, 0], "partition_index 0 is listed twice"),
        ([], "lists no partitions"),
    ],
)
def test_a_topic_with_impossible_partition_indexes_is_refused_and_others_applied(
    indexes: list[int], field: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = MetadataStore()
    with caplog.at_level(logging.WARNING):
        store.apply_metadata(snapshot(topic("bad", indexes), topic("good", [1, 0])))
    assert "bad" not in store.topics()  # checked first: without the check, a 2**31 loop follows
    assert store.partitions_for_topic("bad") is None
    assert store.partitions_for_topic("good") == {0, 1}
    problem = store.topic_problem("bad")
    assert problem is not None and problem.startswith(SOURCE) and field in problem
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert field in caplog.records[0].getMessage()


def test_a_refused_topic_comes_back_with_a_valid_answer_and_is_logged_once() -> None:
    store = MetadataStore()
    store.apply_metadata(snapshot(topic("t", [0, 1])))
    store.apply_metadata(snapshot(topic("t", [0, 2**31 - 1])))
    assert "t" not in store.topics()  # known before: dropped, not kept stale
    assert store.partitions_for_topic("t") is None
    store.apply_metadata(snapshot(topic("t", [1, 0])))
    assert store.partitions_for_topic("t") == {0, 1}
    assert store.topic_problem("t") is None


def test_repeated_refusals_log_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    store = MetadataStore()
    with caplog.at_level(logging.WARNING):
        for _ in range(20):
            store.apply_metadata(snapshot(topic("t", [-1])))
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_topics_nobody_asked_for_are_not_kept() -> None:
    store = MetadataStore()
    answer = MetadataSnapshot(
        brokers=NODES,
        topics=(topic("wanted", [0]), topic("other", [0])),
        requested_topics=frozenset({"wanted"}),
    )
    store.apply_metadata(answer)
    assert store.topics() == {"wanted"}


@pytest.mark.parametrize(
    ("indexes", "expected"),
    [([0], None), ([2, 0, 1], None), ([1], "partition_index 1"), ([0, 1, 1], "listed twice")],
)
def test_partitions_problem(indexes: list[int], expected: str | None) -> None:
    problem = partitions_problem(indexes)
    assert problem is None if expected is None else (problem is not None and expected in problem)


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ((1, "h", 9092), None),
        ((1, "h", 70000), "port 70000"),
        ((1, "h", -1), "port -1"),
        ((1, "h", 0), "port 0"),
        ((-1, "h", 9092), "node_id -1"),
        ((2**30, "h", 9092), "node_id 1073741824"),
        ((1, "", 9092), "host ''"),
        ((1, "a b", 9092), "host 'a b'"),
        ((1, "h\x00", 9092), "host"),
    ],
)
def test_node_problem(node: tuple[Any, Any, Any], expected: str | None) -> None:
    problem = node_problem(*node)
    assert problem is None if expected is None else (problem is not None and expected in problem)


def lie_about(name: str, index: int) -> Rewrite:
    def fn(response: Any, frame: bytes) -> Any:
        assert isinstance(response, MetadataResponse)
        for t in response.topics:
            if t.name == name:
                t.partitions[0].partition_index = index
        return response

    return Rewrite(fn)


@pytest.mark.parametrize("index", [2**31 - 1, -1])
async def test_producer_refuses_the_topic_and_keeps_serving_the_others(index: int) -> None:
    async with watch_loop() as watch, FakeCluster(brokers=1) as fc:
        fc.create_topic("bad", partitions=1)
        fc.create_topic("good", partitions=1)
        fc.intercept(METADATA, lambda *_: lie_about("bad", index), times=None)
        with anyio.fail_after(10):
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, max_block_ms=500) as producer:
                with pytest.raises(KafkaTimeoutError) as info:
                    await producer.send("bad", b"x")
                message = str(info.value)
                assert "Metadata v" in message and f"node 1 (127.0.0.1:{fc.address(1)[1]})" in message
                assert f"partition_index {index} is out of range" in message
                assert (await producer.send_and_wait("good", b"y")).offset == 0
    watch.assert_responsive()


async def test_consumer_keeps_reading_the_others() -> None:
    good, bad = TopicPartition("good", 0), TopicPartition("bad", 0)
    async with watch_loop() as watch, FakeCluster(brokers=1) as fc:
        fc.create_topic("bad", partitions=1)
        fc.create_topic("good", partitions=1)
        produce(fc, good, [b"a", b"b"])
        fc.intercept(METADATA, lambda *_: lie_about("bad", 2**31 - 1), times=None)
        with anyio.fail_after(10):
            async with consumer(fc, request_timeout_ms=5000) as c:
                c.assign([bad, good])
                with anyio.fail_after(2.5):  # not held back until the bad partition's reset times out
                    assert [r.value for r in await consume(c, 2)] == [b"a", b"b"]
                assert c.partitions_for_topic("bad") is None
                assert c.partitions_for_topic("good") == {0}
    watch.assert_responsive()


_INT32 = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    indexes=st.lists(st.one_of(_INT32, st.integers(0, 3)), max_size=5),
    nodes=st.lists(st.tuples(_INT32, st.text(max_size=5), _INT32), max_size=3),
)
def test_any_answer_leaves_a_consistent_store(indexes: list[int], nodes: list[tuple[int, str, int]]) -> None:
    """Whatever the indexes and nodes: the lied-about topic is either exactly 0..N-1 or
    absent, only usable nodes are kept, and the good topic of the same answer is applied."""
    store = MetadataStore()
    brokers = (*NODES, *(BrokerNode(n, h, p) for n, h, p in nodes))
    store.apply_metadata(snapshot(topic("t", indexes), topic("good", [0]), brokers=brokers))
    parts = store.partitions_for_topic("t")
    assert parts is None or parts == set(range(len(indexes)))
    assert all(node_problem(n.node_id, n.host, n.port) is None for n in store.nodes())
    assert store.partitions_for_topic("good") == {0}
