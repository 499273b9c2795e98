"""Spot checks of the broker error table against Kafka's Errors.java."""

from __future__ import annotations

import pytest

from aiokafka_lead import errors as E


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (-1, E.UnknownServerError),
        (1, E.OffsetOutOfRangeError),
        (3, E.UnknownTopicOrPartitionError),
        (6, E.NotLeaderOrFollowerError),
        (35, E.UnsupportedVersionError),
        (74, E.FencedLeaderEpochError),
        (75, E.UnknownLeaderEpochError),
        (78, E.OffsetNotAvailableError),
        (79, E.MemberIdRequiredError),
        (80, E.PreferredLeaderNotAvailableError),
        (84, E.ElectionNotNeededError),
        (100, E.UnknownTopicIdError),
        (118, E.TelemetryTooLargeError),
        (120, E.TransactionAbortableError),
        (129, E.RebootstrapRequiredError),
        (134, E.GroupDeletionFailedError),
        (136, E.ControllerIdNotRegisteredError),
    ],
)
def test_code_to_class(code: int, cls: type[E.BrokerResponseError]) -> None:
    err = E.error_for_code(code, "why")
    assert type(err) is cls and err.errno == code and "why" in str(err)


def test_retriable_and_metadata_flags() -> None:
    assert E.NotLeaderOrFollowerError.retriable and E.NotLeaderOrFollowerError.invalid_metadata
    assert E.FencedLeaderEpochError.retriable and E.FencedLeaderEpochError.invalid_metadata
    assert E.OffsetNotAvailableError.retriable and not E.OffsetNotAvailableError.invalid_metadata
    assert not E.TopicAuthorizationFailedError.retriable
    assert not E.UnknownServerError.retriable


def test_table_is_complete_and_consistent() -> None:
    assert sorted(E.ERROR_CLASSES) == [-1, *range(1, 137)]  # Kafka 4.4: up to 136
    for code, cls in E.ERROR_CLASSES.items():
        assert cls.errno == code and cls.__name__.endswith("Error")
        assert issubclass(cls, E.BrokerResponseError)


def test_unknown_code_keeps_its_number() -> None:
    err = E.error_for_code(999)
    assert isinstance(err, E.UnknownServerError) and err.errno == 999
    assert E.UnknownServerError.errno == -1


def test_corrupt_message_is_a_corrupt_record_error() -> None:
    assert isinstance(E.error_for_code(2), E.CorruptRecordError)


def test_aiokafka_aliases() -> None:
    assert E.NotLeaderForPartitionError is E.NotLeaderOrFollowerError
    assert E.UnknownError is E.UnknownServerError
    assert E.GroupCoordinatorNotAvailableError is E.CoordinatorNotAvailableError
