"""Base classes of the exception hierarchy (public through :mod:`aiokafka_lead.errors`)."""

from __future__ import annotations

from typing import ClassVar


class KafkaError(Exception):
    """Base of every error this client raises."""

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
        message: str,
        *,
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
        super().__init__(f"{message} ({', '.join(where)})" if where else message)
        self.topic = topic
        self.partition = partition
        self.offset = offset


class UnsupportedCodecError(KafkaError, RuntimeError):
    """A compression codec is needed whose library is not installed.

    Also a RuntimeError: what aiokafka raises at construction for a missing codec library.
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
    """An error code returned by a broker in a response."""

    errno: ClassVar[int] = -1
    error_name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"

    def __init__(self, message: str | None = None) -> None:
        text = f"[Error {self.errno}] {self.error_name}"
        super().__init__(f"{text}: {message}" if message else text)
        self.message = message


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
