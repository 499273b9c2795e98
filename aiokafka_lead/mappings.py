"""Small helpers over dictionaries."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def get_or_add(mapping: dict[K, V], key: K, make: Callable[[K], V]) -> V:
    """``mapping[key]``, first set to ``make(key)`` when ``key`` has no value (or None)."""
    value = mapping.get(key)
    if value is None:
        value = mapping[key] = make(key)
    return value


__all__ = ["get_or_add"]
