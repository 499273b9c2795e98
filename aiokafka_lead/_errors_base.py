r"""Every exception that is not one broker error code (public through :mod:`aiokafka_lead.errors`).

The hierarchy is aiokafka's where aiokafka has the name: ``KafkaError`` is a
``RuntimeError``; ``ConsumerStoppedError`` and ``IllegalOperation`` are plain
``Exception``\ s, not ``KafkaError``\ s.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import ClassVar

from aiokafka_lead._topic_partition import TopicPartition


class KafkaError(RuntimeError):
    """Base of every error this client raises (a RuntimeError, as aiokafka's)."""

    retriable: bool = False
    invalid_metadata: bool = False


class KafkaProtocolError(KafkaError):
    """The peer sent bytes that violate the Kafka protocol."""


class DecodeError(KafkaProtocolError):
    """Malformed bytes: the only exception the sans-I/O decoders raise."""


class CorruptRecordError(KafkaError):
    """A record batch failed its CRC or structural checks."""

    def __init__(
        self,
        *args: object,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> None:
        where = []
        if topic is not None:
            where.append(f"topic={topic}")
        if partition is not None:
            where.append(f"partition={partition}")
        if offset is not None:
            where.append(f"offset={offset}")
        if args and where:
            args = (f"{args[0]} ({', '.join(where)})", *args[1:])
        super().__init__(*args)
        self.topic = topic
        self.partition = partition
        self.offset = offset


class UnsupportedCodecError(KafkaError):
    """A compression codec is needed whose library is not installed.

    A RuntimeError (as every KafkaError): what aiokafka raises at construction for a
    missing codec library.
    """


class KafkaConfigurationError(KafkaError, ValueError):
    """A client option that cannot work (aiokafka's name; also a ValueError, as aiokafka raises)."""


class KafkaConnectionError(KafkaError):
    """A broker connection failed or was closed."""

    retriable = True
    invalid_metadata = True


class KafkaTimeoutError(KafkaError):
    """An operation did not finish within its deadline."""

    retriable = True


class BrokerResponseError(KafkaError):
    """An error code returned by a broker in a response.

    As in aiokafka, ``message`` is the Kafka name of the code (``"OFFSET_OUT_OF_RANGE"``,
    also ``error_name``) and ``description`` a sentence about it (empty where there is
    none); the arguments are the broker's text or whatever the caller passed.
    """

    errno: ClassVar[int] = -1
    error_name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    message: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    description: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "message" not in cls.__dict__:
            cls.message = cls.error_name

    def __init__(self, *args: object) -> None:
        if len(args) == 1 and args[0] is None:
            args = ()
        super().__init__(*args)

    def __str__(self) -> str:
        text = f"[Error {self.errno}] {self.error_name}"
        if not self.args:
            return text
        detail = self.args[0] if len(self.args) == 1 else self.args
        return f"{text}: {detail}"


class ClientClosedError(KafkaError):
    """The client was stopped (or never started)."""


class ClientFailedError(KafkaError):
    """A background task of the client failed, so the client cannot go on.

    ``__cause__`` is the background task's exception (also ``cause``). Every call that
    was waiting when it happened raises this, and so does every later call; ``stop()``
    still returns. Not a :class:`ClientClosedError`: ``async for`` over a consumer ends
    quietly on close but raises this.
    """

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


# ---------------------------------------------------------------------------------------
# aiokafka's client-side errors (same names, bases and ``retriable`` / ``invalid_metadata``)


class IllegalStateError(KafkaError):
    """A call that does not fit the client's current state (e.g. assign() after subscribe())."""


class IllegalArgumentError(KafkaError):
    """An argument that cannot work (aiokafka's ``NewTopic`` raises it for contradictory settings)."""


class IllegalOperation(Exception):
    """An operation the client's configuration does not allow (not a ``KafkaError``, as in aiokafka).

    ``commit()`` / ``committed()`` of a consumer without ``group_id``; transactional calls of
    a producer without ``transactional_id``; ``send()`` of a transactional producer outside
    a transaction.
    """


class ConsumerStoppedError(Exception):
    """The consumer was stopped while a call waited on it (not a ``KafkaError``, as in aiokafka)."""


class CommitFailedError(KafkaError):
    """The commit cannot complete: the group rebalanced and the partitions may have moved."""


class NoOffsetForPartitionError(KafkaError):
    """``auto_offset_reset="none"`` and a partition has no committed offset to start from.

    ``partitions`` names them (empty when raised by user code with aiokafka's arguments).
    """

    def __init__(self, *args: object, partitions: Collection[TopicPartition] = ()) -> None:
        if not args and partitions:
            names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions))
            args = (f"no committed offset and auto_offset_reset='none' for {names}",)
        super().__init__(*args)
        self.partitions = set(partitions)


class RecordTooLargeError(KafkaError):
    """A record larger than the fetch size allows (aiokafka's name; brokers of Kafka 4 never cause it)."""


class ProducerClosed(ClientClosedError):
    """The producer is closed (a ClientClosedError, raised by a stopped producer's calls)."""


_FENCED = (
    "there is a newer producer with the same transactional_id, or the transaction timed out "
    "(keep processing below transaction_timeout_ms)"
)


class ProducerFenced(KafkaError):
    """Another producer with the same transactional id took over (or the transaction timed out).

    The broker codes that mean it (``ProducerFencedError``, ``InvalidProducerEpochError``)
    are subclasses, so ``except ProducerFenced`` catches what the producer raises.
    """

    def __init__(self, msg: object = _FENCED, *args: object) -> None:
        super().__init__(msg, *args)


class NoBrokersAvailable(KafkaError):
    """No broker could be reached."""

    retriable = True
    invalid_metadata = True


class NodeNotReadyError(KafkaError):
    """The connection to a node is not ready yet."""

    retriable = True


class CorrelationIdError(KafkaProtocolError):
    """A response did not carry the correlation id of the request it answers."""

    retriable = True


class Cancelled(KafkaError):
    """A request was cancelled."""

    retriable = True


class TooManyInFlightRequests(KafkaError):
    """A connection has too many requests in flight."""

    retriable = True


class StaleMetadata(KafkaError):
    """The metadata does not know a node or partition it should."""

    retriable = True
    invalid_metadata = True


class MetadataEmptyBrokerList(KafkaError):
    """A metadata response listed no brokers."""

    retriable = True


class UnrecognizedBrokerVersion(KafkaError):
    """The broker's version could not be told."""


class IncompatibleBrokerVersion(KafkaError):
    """The broker does not support a request version this call needs."""


class AuthenticationMethodNotSupported(KafkaError):
    """The SASL mechanism asked for is not supported."""


class AuthenticationFailedError(KafkaError):
    """Authentication failed."""


class KafkaUnavailableError(KafkaError):
    """Kafka is unavailable."""


class QuotaViolationError(KafkaError):
    """A client quota was exceeded."""
