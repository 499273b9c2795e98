"""Exception hierarchy.

Base classes come from :mod:`aiokafka_lead._errors_base`, one class per Kafka error code
(Kafka 4.1's ``Errors.java``) from :mod:`aiokafka_lead._error_codes`; everything is public
here, so ``from aiokafka_lead.errors import NotLeaderOrFollowerError`` works like aiokafka's
module. ``retriable`` / ``invalid_metadata`` mirror Java's ``RetriableException`` /
``InvalidMetadataException`` parents. Class names: the Kafka name in CamelCase plus ``Error``
(a trailing ``_EXCEPTION`` is dropped, ``..._ERROR`` is not doubled).
"""

from __future__ import annotations

from aiokafka_lead._error_codes import *
from aiokafka_lead._error_codes import UnknownServerError
from aiokafka_lead._error_codes import __all__ as _CODE_NAMES
from aiokafka_lead._errors_base import (
    BrokerResponseError,
    ClientClosedError,
    ClientFailedError,
    CorruptRecordError,
    DecodeError,
    KafkaConfigurationError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    UnsupportedCodecError,
)


class _UnknownCodeError(UnknownServerError):
    """An error code this client does not know; ``errno`` is the number the broker sent."""

    def __init__(self, code: int, message: str | None = None) -> None:
        self.errno = code  # type: ignore[misc]  # per-instance override of the ClassVar
        super().__init__(message)


def _collect() -> dict[int, type[BrokerResponseError]]:
    table: dict[int, type[BrokerResponseError]] = {}
    pending: list[type[BrokerResponseError]] = [BrokerResponseError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls is not BrokerResponseError and not cls.__name__.startswith("_"):
            table[cls.errno] = cls
    return dict(sorted(table.items()))


#: error code -> exception class, for every code Kafka 4.1 defines (0 NONE excluded)
ERROR_CLASSES: dict[int, type[BrokerResponseError]] = _collect()


def error_for_code(code: int, message: str | None = None) -> BrokerResponseError:
    """The exception instance for a non-zero broker error code (unknown codes keep their number)."""
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        return _UnknownCodeError(code, message)
    return cls(message)


# aiokafka-compatible names, so users can migrate by changing the import
UnknownError = UnknownServerError
NotLeaderForPartitionError = NotLeaderOrFollowerError
MessageSizeTooLargeError = MessageTooLargeError
NetworkExceptionError = NetworkError
GroupLoadInProgressError = CoordinatorLoadInProgressError
GroupCoordinatorNotAvailableError = CoordinatorNotAvailableError
NotCoordinatorForGroupError = NotCoordinatorError
CorruptRecordException = CorruptMessageError
InvalidMessageError = CorruptMessageError
InvalidReplicationAssignmentError = InvalidReplicaAssignmentError
InvalidConfigurationError = InvalidConfigError
OutOfOrderSequenceNumber = OutOfOrderSequenceNumberError
DuplicateSequenceNumber = DuplicateSequenceNumberError
InvalidProducerEpoch = InvalidProducerEpochError
InvalidTxnState = InvalidTxnStateError
InvalidProducerIdMapping = InvalidProducerIdMappingError
InvalidTransactionTimeout = InvalidTransactionTimeoutError
ConcurrentTransactions = ConcurrentTransactionsError
TransactionCoordinatorFenced = TransactionCoordinatorFencedError
TransactionalIdAuthorizationFailed = TransactionalIdAuthorizationFailedError
SecurityDisabled = SecurityDisabledError
OperationNotAttempted = OperationNotAttemptedError
LogDirNotFound = LogDirNotFoundError
SaslAuthenticationFailed = SaslAuthenticationFailedError
UnknownProducerId = UnknownProducerIdError
ReassignmentInProgress = ReassignmentInProgressError

__all__ = [
    "KafkaError",
    "KafkaProtocolError",
    "DecodeError",
    "CorruptRecordError",
    "UnsupportedCodecError",
    "KafkaConfigurationError",
    "KafkaConnectionError",
    "KafkaTimeoutError",
    "BrokerResponseError",
    "ClientClosedError",
    "ClientFailedError",
    "ERROR_CLASSES",
    "error_for_code",
    *_CODE_NAMES,
]
