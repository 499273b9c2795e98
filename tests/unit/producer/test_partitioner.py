"""murmur2 vectors printed by Kafka 4.1.1's own Utils.murmur2 / toPositive % 24."""

from __future__ import annotations

import random

import pytest

from aiokafka_lead.producer.partitioner import DefaultPartitioner, murmur2, partition_for_key

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
