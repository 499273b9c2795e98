"""Argument checks at the call: what the producer's and consumer's methods accept.

:mod:`aiokafka_lead.config.validation` checks the constructors' keywords; this module checks
the arguments of each call (a topic, a partition, a timestamp, headers, an offset) before
the call changes anything, so a bad argument fails that call alone with a message naming
it, never later inside a background task (a timestamp of 2**63 would not fit the batch's
int64 field when the sender builds it) or as a low-level error.

Error types follow aiokafka where it defines them (``seek`` raises ``ValueError`` for an
offset that is not a non-negative int; a partition that is not a ``TopicPartition`` is a
``TypeError``) and Java otherwise (a negative timestamp or partition is refused, as
``ProducerRecord`` does): a wrong type is a ``TypeError``, a wrong value a ``ValueError``,
and a topic name Kafka cannot have is an :class:`InvalidTopicError` (what a broker would
answer, and a ``ValueError`` too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from aiokafka_lead.errors import InvalidTopicError
from aiokafka_lead.structs import TopicPartition

#: Kafka's rules for topic names (``org.apache.kafka.common.internals.Topic.validate``)
MAX_TOPIC_LENGTH = 249
_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]+")
MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1

Header = tuple[str, bytes | None]


class InvalidTopicNameError(InvalidTopicError, ValueError):
    """A topic name Kafka refuses (checked before anything is sent)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_topic(topic: object, what: str = "topic") -> str:
    """A name Kafka accepts: 1-249 characters of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``."""
    if not isinstance(topic, str):
        raise TypeError(f"{what} must be a str, not {type(topic).__name__} ({topic!r})")
    if topic in ("", ".", ".."):
        raise InvalidTopicNameError(f"{what} {topic!r} is not a valid topic name")
    if len(topic) > MAX_TOPIC_LENGTH:
        raise InvalidTopicNameError(
            f"{what} {topic[:20]!r}... is {len(topic)} characters long; Kafka allows {MAX_TOPIC_LENGTH}"
        )
    if not _TOPIC_CHARS.fullmatch(topic):
        raise InvalidTopicNameError(
            f"{what} {topic!r} is not a valid topic name: only ASCII letters, digits, '.', '_' and '-'"
        )
    return topic


def check_partition(partition: object, what: str = "partition") -> int:
    """A partition index: an int in 0..2**31-1."""
    if not _is_int(partition):
        raise TypeError(f"{what} must be an int, not {type(partition).__name__} ({partition!r})")
    assert isinstance(partition, int)
    if not 0 <= partition <= MAX_INT32:
        raise ValueError(f"{what} must be in 0..{MAX_INT32}, not {partition}")
    return partition


def check_timestamp(timestamp_ms: object) -> int:
    """A record timestamp: an int of milliseconds since the epoch, 0..2**63-1 (Java refuses
    negative ones too)."""
    if not _is_int(timestamp_ms):
        raise TypeError(
            f"timestamp_ms must be an int (milliseconds since the epoch), not "
            f"{type(timestamp_ms).__name__} ({timestamp_ms!r})"
        )
    assert isinstance(timestamp_ms, int)
    if not 0 <= timestamp_ms <= MAX_INT64:
        raise ValueError(f"timestamp_ms must be in 0..{MAX_INT64}, not {timestamp_ms}")
    return timestamp_ms


def check_headers(headers: object) -> list[Header]:
    """Record headers: an iterable of ``(str, bytes | None)`` pairs; the key must encode as UTF-8."""
    if isinstance(headers, str | bytes | bytearray | memoryview | dict) or not isinstance(headers, Iterable):
        raise TypeError(
            f"headers must be an iterable of (str, bytes | None) pairs, not {type(headers).__name__}"
        )
    out: list[Header] = []
    for i, item in enumerate(headers):
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise TypeError(f"headers[{i}] must be a (str, bytes | None) pair, not {item!r}")
        key, value = item
        if not isinstance(key, str):
            raise TypeError(f"headers[{i}] key must be a str, not {type(key).__name__} ({key!r})")
        if value is not None and not isinstance(value, bytes):
            raise TypeError(f"headers[{i}] value must be bytes or None, not {type(value).__name__}")
        try:
            key.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"headers[{i}] key {key!r} cannot be encoded as UTF-8") from exc
        out.append((key, value))
    return out


def check_offset(offset: object, what: str = "offset") -> int:
    """An offset to seek to: an int in 0..2**63-1 (``ValueError`` otherwise, as in aiokafka)."""
    if not _is_int(offset) or not 0 <= offset <= MAX_INT64:  # type: ignore[operator]
        raise ValueError(f"{what} must be an int in 0..{MAX_INT64}, not {offset!r}")
    assert isinstance(offset, int)
    return offset


def check_topic_partition(tp: object, what: str = "partition") -> TopicPartition:
    """A ``TopicPartition`` with a valid topic name and an index in 0..2**31-1."""
    if not isinstance(tp, TopicPartition):
        raise TypeError(f"{what} must be a TopicPartition, not {type(tp).__name__} ({tp!r})")
    if not isinstance(tp.topic, str):
        raise TypeError(f"{what} {tp!r}: the topic must be a str")
    check_topic(tp.topic, f"{what} {tp!r}: topic")
    if not _is_int(tp.partition) or not 0 <= tp.partition <= MAX_INT32:
        raise ValueError(f"{what} {tp!r} has an invalid partition index (0..{MAX_INT32})")
    return tp


def check_topic_partitions(tps: Iterable[Any], what: str = "partitions") -> list[TopicPartition]:
    """Every item a valid ``TopicPartition`` (all checked before any is used)."""
    if isinstance(tps, str | bytes | TopicPartition) or not isinstance(tps, Iterable):
        raise TypeError(f"{what} must be an iterable of TopicPartition, not {type(tps).__name__}")
    return [check_topic_partition(tp, f"{what}[{i}]") for i, tp in enumerate(tps)]
