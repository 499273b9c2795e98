"""Small helpers over dictionaries."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from aiokafka_lead._topic_partition import TopicPartition

K = TypeVar("K")
V = TypeVar("V")


def get_or_add(mapping: dict[K, V], key: K, make: Callable[[K], V]) -> V:
    """``mapping[key]``, first set to ``make(key)`` when ``key`` has no value (or None)."""
    value = mapping.get(key)
    if value is None:
        value = mapping[key] = make(key)
    return value


def group_by_topic(items: Iterable[tuple[TopicPartition, V]]) -> dict[str, list[V]]:
    """Each partition's entry under its topic name, in the order given (a request's topics)."""
    out: dict[str, list[V]] = {}
    for tp, item in items:
        out.setdefault(tp.topic, []).append(item)
    return out


__all__ = ["get_or_add", "group_by_topic"]
