"""aiokafka_lead.errors against the installed aiokafka.errors, class by class.

What user code can observe: ``issubclass`` between the error classes both have (and the
builtin bases aiokafka gives them), ``errno``, ``retriable``, ``invalid_metadata``,
``message`` / ``description`` and the constructor arguments.
"""

from __future__ import annotations

import inspect

import aiokafka.errors as A
import pytest

import aiokafka_lead.consumer as consumer_pkg
import aiokafka_lead.consumer.errors as consumer_errors
import aiokafka_lead.errors as L

AIOKAFKA_CLASSES = {
    name: value
    for name, value in vars(A).items()
    if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == "aiokafka.errors"
}
SHARED = sorted(name for name in AIOKAFKA_CLASSES if hasattr(L, name))

#: (sub, base) relations aiokafka_lead has on purpose and aiokafka has not
EXTRA_RELATIONS = {
    # the broker codes that mean "fenced" are ProducerFenced too, so ``except ProducerFenced``
    # catches what the producer raises (aiokafka raises ProducerFenced for INVALID_PRODUCER_EPOCH)
    ("InvalidProducerEpoch", "ProducerFenced"),
}
#: (name, attribute) -> why aiokafka_lead differs (Kafka 4.1's Java classification, or a
#: retry decision of the client itself); also in docs/migrating.md
DIFFERENT_ATTRIBUTES = {
    ("KafkaProtocolError", "retriable"): "a protocol violation is not retried by aiokafka_lead",
    ("KafkaTimeoutError", "retriable"): "Java's TimeoutException is retriable; the retry loops use it",
    ("BrokerResponseError", "errno"): "the base class carries UNKNOWN_SERVER_ERROR's -1",
    ("CorruptRecordException", "retriable"): "Java: CorruptRecordException is retriable",
    ("InvalidMessageError", "retriable"): "Java: CorruptRecordException is retriable",
    ("ReplicaNotAvailableError", "retriable"): "Java: an InvalidMetadataException",
    ("ReplicaNotAvailableError", "invalid_metadata"): "Java: an InvalidMetadataException",
    ("StaleLeaderEpochCodeError", "retriable"): "code 13 is Java's NetworkException",
    ("StaleLeaderEpochCodeError", "invalid_metadata"): "code 13 is Java's NetworkException",
    ("ConcurrentTransactions", "retriable"): "Java: retriable",
    ("FetchSessionIdNotFound", "retriable"): "Java: retriable",
    ("InvalidFetchSessionEpoch", "retriable"): "Java: retriable",
    ("ListenerNotFound", "retriable"): "Java: an InvalidMetadataException",
    ("ListenerNotFound", "invalid_metadata"): "Java: an InvalidMetadataException",
}


def test_every_aiokafka_error_class_exists() -> None:
    assert sorted(set(AIOKAFKA_CLASSES) - set(SHARED)) == []


def test_subclass_relations_match_aiokafka() -> None:
    different = []
    for sub in SHARED:
        for base in SHARED:
            theirs = issubclass(AIOKAFKA_CLASSES[sub], AIOKAFKA_CLASSES[base])
            mine = issubclass(getattr(L, sub), getattr(L, base))
            if theirs != mine and (sub, base) not in EXTRA_RELATIONS:
                different.append((sub, base, theirs, mine))
    assert different == []
    for sub, base in EXTRA_RELATIONS:
        assert not issubclass(AIOKAFKA_CLASSES[sub], AIOKAFKA_CLASSES[base])
        assert issubclass(getattr(L, sub), getattr(L, base))


@pytest.mark.parametrize("name", SHARED)
def test_builtin_bases_include_aiokafka_ones(name: str) -> None:
    """Whatever ``except RuntimeError`` / ``except Exception`` catches in aiokafka, it catches here."""
    theirs = {c for c in AIOKAFKA_CLASSES[name].__mro__ if c.__module__ == "builtins"}
    mine = {c for c in getattr(L, name).__mro__ if c.__module__ == "builtins"}
    assert theirs <= mine


def test_not_kafka_errors_as_in_aiokafka() -> None:
    for name in ("ConsumerStoppedError", "IllegalOperation"):
        assert not issubclass(getattr(L, name), L.KafkaError)
        assert issubclass(getattr(L, name), Exception)
    assert issubclass(L.KafkaError, RuntimeError)


@pytest.mark.parametrize("name", SHARED)
def test_errno_retriable_invalid_metadata(name: str) -> None:
    theirs, mine = AIOKAFKA_CLASSES[name], getattr(L, name)
    for attribute in ("errno", "retriable", "invalid_metadata"):
        if (name, attribute) in DIFFERENT_ATTRIBUTES:
            assert getattr(theirs, attribute, None) != getattr(mine, attribute, None)
        else:
            assert getattr(theirs, attribute, None) == getattr(mine, attribute, None), attribute


def test_for_code_and_kafka_errors() -> None:
    for code, cls in A.kafka_errors.items():
        assert L.for_code(code).errno == cls.errno
        assert L.kafka_errors[code].errno == code
    assert L.for_code(0) is L.NoError
    assert L.for_code(9999) is L.UnknownError
    assert A.for_code(9999) is A.UnknownError


def test_message_is_the_kafka_name_and_args_are_kept() -> None:
    err = L.OffsetOutOfRangeError("fetch at 5", 2)
    assert L.OffsetOutOfRangeError.message == A.OffsetOutOfRangeError.message == "OFFSET_OUT_OF_RANGE"
    assert isinstance(L.OffsetOutOfRangeError.description, str)
    assert err.args == ("fetch at 5", 2) == A.OffsetOutOfRangeError("fetch at 5", 2).args
    assert str(err).startswith("[Error 1] ")
    assert L.UnknownTopicOrPartitionError().args == ()
    assert L.BrokerResponseError.description == ""


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("KafkaError", ()),
        ("KafkaError", ("a", "b")),
        ("CommitFailedError", ()),
        ("CommitFailedError", ("extra",)),
        ("ProducerFenced", ()),
        ("ProducerFenced", ("custom",)),
        ("NoOffsetForPartitionError", ("tp",)),
        ("ConsumerStoppedError", ()),
        ("IllegalOperation", ("Requires group_id",)),
        ("CorruptRecordException", ()),
        ("InvalidProducerEpoch", ()),
        ("UnknownError", ("x",)),
    ],
)
def test_constructed_with_aiokafka_arguments(name: str, args: tuple[object, ...]) -> None:
    AIOKAFKA_CLASSES[name](*args)  # what aiokafka accepts
    err = getattr(L, name)(*args)
    assert isinstance(err, getattr(L, name))
    if args:
        assert str(args[0]) in str(err)


def test_producer_fenced_keyword_and_default_message() -> None:
    assert L.ProducerFenced(msg="gone").args == ("gone",) == A.ProducerFenced(msg="gone").args
    assert "transactional_id" in str(L.ProducerFenced())
    assert isinstance(L.ProducerFencedError(), L.ProducerFenced)


def test_no_offset_for_partition_names_partitions() -> None:
    tp = L.NoOffsetForPartitionError(partitions={consumer_errors.TopicPartition("t", 1)})
    assert tp.partitions == {consumer_errors.TopicPartition("t", 1)}
    assert "t-1" in str(tp)


def test_consumer_errors_are_the_classes_of_errors_module() -> None:
    for name in (
        "ConsumerStoppedError",
        "CommitFailedError",
        "IllegalStateError",
        "NoOffsetForPartitionError",
    ):
        assert getattr(consumer_errors, name) is getattr(L, name)
        assert getattr(consumer_pkg, name) is getattr(L, name)
