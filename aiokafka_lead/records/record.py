"""The decoded record: what every batch reader (v2, legacy v0/v1, C or Python) hands out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Header", "Record"]

Header = tuple[str, bytes | None]


class Record(NamedTuple):
    """One decoded record. A NamedTuple: the decoder builds it with one C-level call.

    Immutable all the way down (``headers`` is a tuple of pairs, ``()`` when there are none),
    so a record can be shared, e.g. by the ``ConsumerRecord`` made from it, and the C decoder
    can keep it out of the cyclic garbage collector's work.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[Header]
