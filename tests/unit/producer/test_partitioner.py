"""murmur2 vectors printed by Kafka 4.1.1's own Utils.murmur2 / toPositive % 24."""

from __future__ import annotations

import random

import pytest

from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.producer.accumulator import RecordAccumulator
from aiokafka_lead.producer.config import ProducerConfig
from aiokafka_lead.producer.partitioner import DefaultPartitioner, murmur2, partition_for_key
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster

JAVA_VECTORS = [
    ("21", -973932308, 12),
    ("foobar", -790332482, 6),
    ("a-little-bit-long-string", -985981536, 8),
    ("a-little-bit-longer-string", -1486304829, 11),
    ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, 5),
    ("abc", 479470107, 3),
    ("", 275646681, 9),
    ("k", -1567496736, 8),
    ("key-42", -187086521, 15),
    ("été", -2101193575, 1),
]


@pytest.mark.parametrize(("key", "hashed", "partition"), JAVA_VECTORS)
def test_murmur2_matches_java(key: str, hashed: int, partition: int) -> None:
    assert murmur2(key.encode()) == hashed
    assert partition_for_key(key.encode(), 24) == partition


def test_sticky_partitioner_sticks_until_batch_closes() -> None:
    p = DefaultPartitioner(random.Random(1))
    parts = list(range(6))
    first = p.partition("t", None, parts, parts)
    assert all(p.partition("t", None, parts, parts) == first for _ in range(50))
    p.batch_closed("t", first, parts)
    second = p.partition("t", None, parts, parts)
    assert second != first
    p.batch_closed("t", first, parts)  # not the sticky one any more: no change
    assert p.partition("t", None, parts, parts) == second


def test_sticky_skips_unavailable_and_keys_ignore_stickiness() -> None:
    p = DefaultPartitioner(random.Random(2))
    assert p.partition("t", None, [0, 1, 2], [2]) == 2
    assert p.partition("t", b"21", list(range(24)), [0]) == 12  # keys: all partitions, like Java


def test_sticky_partition_is_checked_against_each_new_pool() -> None:
    p = DefaultPartitioner(random.Random(3))
    parts = list(range(6))
    first = p.partition("t", None, parts, parts)
    shrunk = [x for x in parts if x != first]  # a new topic view: its leader is gone
    second = p.partition("t", None, parts, shrunk)
    assert second in shrunk
    assert all(p.partition("t", None, parts, shrunk) == second for _ in range(20))
    back = list(parts)  # another view, the first partition back: stickiness holds
    assert p.partition("t", None, parts, back) == second
    p.batch_closed("t", second, [7])  # the batch closed; the producer saw only partition 7
    assert p.partition("t", None, parts, back) != 7  # not in the pool records go to
    assert p.partition("t", None, parts, [7]) == 7


def test_a_keyless_record_does_not_search_an_unchanged_pool() -> None:
    class Pool(list[int]):
        searches = 0

        def __contains__(self, item: object) -> bool:
            Pool.searches += 1
            return super().__contains__(item)

    p = DefaultPartitioner(random.Random(4))
    pool = Pool(range(1000))
    p.partition("t", None, pool, pool)
    p.partition("t", None, pool, pool)  # the first found it in this pool
    before = Pool.searches
    for _ in range(100):
        p.partition("t", None, pool, pool)
    assert Pool.searches == before  # O(1) per record, not O(partitions)


def test_batch_closed_moves_to_another_available_partition() -> None:
    p = DefaultPartitioner(random.Random(5))
    for pool in ([0, 1], [3, 4, 5], list(range(100))):
        current = p.partition("t", None, pool, pool)
        for _ in range(50):
            p.batch_closed("t", current, pool)
            moved = p.partition("t", None, pool, pool)
            assert moved != current and moved in pool
            current = moved
    p.batch_closed("t", current, [current])  # the only one: it stays
    assert p.sticks_to("t", current)
    p.batch_closed("t", current, [])  # nothing known available: it stays too
    assert p.sticks_to("t", current)



def test_the_accumulator_reports_only_the_sticky_partitions_closed_batches() -> None:
    config = ProducerConfig.build({"bootstrap_servers": "localhost:9092"})
    heard: list[TopicPartition] = []
    sticky = {"t": 1}
    acc = RecordAccumulator(config, on_batch_closed=heard.append, sticky=sticky)
    everything: list[TopicPartition] = []
    every = RecordAccumulator(config, on_batch_closed=everything.append)
    for partition in (0, 1, 2):
        acc._report_close(TopicPartition("t", partition))
        every._report_close(TopicPartition("t", partition))
    assert heard == [TopicPartition("t", 1)]
    assert everything == [TopicPartition("t", p) for p in (0, 1, 2)]
    sticky["t"] = 2  # the partitioner's map, read as it is at each close
    acc._report_close(TopicPartition("t", 2))
    assert heard[-1] == TopicPartition("t", 2)


async def test_keyless_records_move_on_as_their_batches_close() -> None:
    async with FakeCluster(brokers=1) as cluster:
        cluster.create_topic("t", partitions=6, replication_factor=1)
        async with AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=0) as producer:
            used: set[int] = set()
            for _ in range(30):
                handle = await producer.send("t", b"v")
                used.add((await handle).partition)
    assert len(used) > 1  # a closed batch moved the sticky choice
