"""The call-argument checks of aiokafka_lead.config.arguments, one table per function."""

from __future__ import annotations

from typing import Any

import pytest

from aiokafka_lead.config.arguments import (
    check_headers,
    check_offset,
    check_partition,
    check_timestamp,
    check_topic,
    check_topic_partition,
    check_topic_partitions,
)
from aiokafka_lead.errors import InvalidTopicError
from aiokafka_lead.structs import TopicPartition

TP = TopicPartition("t", 0)


@pytest.mark.parametrize("good", ["t", "a.b_c-D9", "x" * 249, "..."])
def test_check_topic_accepts(good: str) -> None:
    assert check_topic(good) == good


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (None, TypeError, "must be a str, not NoneType"),
        (b"t", TypeError, "must be a str, not bytes"),
        ("", InvalidTopicError, "not a valid topic name"),
        (".", InvalidTopicError, "not a valid topic name"),
        ("..", InvalidTopicError, "not a valid topic name"),
        ("x" * 250, InvalidTopicError, "250 characters"),
        ("a/b", InvalidTopicError, "only ASCII"),
        ("tö", InvalidTopicError, "only ASCII"),
    ],
)
def test_check_topic_refuses(bad: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        check_topic(bad)


def test_invalid_topic_names_are_value_errors_too() -> None:
    with pytest.raises(ValueError):
        check_topic("a b")


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (-1, ValueError),
        (2**31, ValueError),
        ("1", TypeError),
        (1.0, TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_check_partition(value: Any, error: type[Exception]) -> None:
    assert check_partition(0) == 0 and check_partition(2**31 - 1) == 2**31 - 1
    with pytest.raises(error, match="partition must be"):
        check_partition(value)


@pytest.mark.parametrize(
    ("value", "error"),
    [(-1, ValueError), (2**63, ValueError), (1.5, TypeError), ("5", TypeError), (False, TypeError)],
)
def test_check_timestamp(value: Any, error: type[Exception]) -> None:
    assert check_timestamp(0) == 0 and check_timestamp(2**63 - 1) == 2**63 - 1
    with pytest.raises(error, match="timestamp_ms must be"):
        check_timestamp(value)


def test_check_headers() -> None:
    assert check_headers([("a", b"1"), ["b", None]]) == [("a", b"1"), ("b", None)]
    assert check_headers(iter([("a", b"")])) == [("a", b"")]
    assert check_headers(()) == []
    for bad in (5, "ab", b"ab", {"a": b"1"}, [("a",)], [("a", b"1", b"2")], [("a", 1)], ["ab"]):
        with pytest.raises(TypeError, match="headers"):
            check_headers(bad)


@pytest.mark.parametrize("bad", ["5", 5.0, -1, 2**63, None, True])
def test_check_offset_raises_value_error_as_aiokafka_does(bad: Any) -> None:
    assert check_offset(0) == 0 and check_offset(2**63 - 1) == 2**63 - 1
    with pytest.raises(ValueError, match=r"offset must be an int in 0\.\."):
        check_offset(bad)


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (("t", 0), TypeError, "must be a TopicPartition, not tuple"),
        (TopicPartition("t", -1), ValueError, "invalid partition index"),
        (TopicPartition("t", "0"), ValueError, "invalid partition index"),  # type: ignore[arg-type]
        (TopicPartition(None, 0), TypeError, "topic must be a str"),  # type: ignore[arg-type]
        (TopicPartition("", 0), InvalidTopicError, "not a valid topic name"),
    ],
)
def test_check_topic_partition(bad: Any, error: type[Exception], message: str) -> None:
    assert check_topic_partition(TP) is TP
    with pytest.raises(error, match=message):
        check_topic_partition(bad)


def test_check_topic_partitions_checks_every_item_first() -> None:
    assert check_topic_partitions([TP, TopicPartition("u", 3)]) == [TP, TopicPartition("u", 3)]
    assert check_topic_partitions(set()) == []
    with pytest.raises(ValueError, match=r"partitions\[1\]"):
        check_topic_partitions([TP, TopicPartition("t", -1)])
    for bad in (TP, "t", 5):
        with pytest.raises(TypeError, match="must be an iterable of TopicPartition"):
            check_topic_partitions(bad)
