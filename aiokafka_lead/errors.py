"""Exception hierarchy.

Base classes come from :mod:`aiokafka_lead._errors_base`, one class per Kafka error code
(Kafka 4.4's ``Errors.java``) from :mod:`aiokafka_lead._error_codes`; everything is public
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
    AuthenticationFailedError,
    AuthenticationMethodNotSupported,
    BrokerResponseError,
    Cancelled,
    ClientClosedError,
    ClientFailedError,
    CommitFailedError,
    ConsumerStoppedError,
    CorrelationIdError,
    CorruptRecordError,
    DecodeError,
    IllegalArgumentError,
    IllegalOperation,
    IllegalStateError,
    IncompatibleBrokerVersion,
    KafkaConfigurationError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    KafkaUnavailableError,
    MetadataEmptyBrokerList,
    NoBrokersAvailable,
    NodeNotReadyError,
    NoOffsetForPartitionError,
    ProducerClosed,
    ProducerFenced,
    QuotaViolationError,
    RecordTooLargeError,
    StaleMetadata,
    TooManyInFlightRequests,
    UnrecognizedBrokerVersion,
    UnsupportedCodecError,
)


class NoError(BrokerResponseError):
    """Code 0 (aiokafka's name): never raised, only what ``for_code(0)`` returns."""

    errno = 0
    error_name = "NO_ERROR"


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
        if cls is not BrokerResponseError and cls.errno and not cls.__name__.startswith("_"):
            table[cls.errno] = cls
    return dict(sorted(table.items()))


#: error code -> exception class, for every code Kafka 4.4 defines (0 NONE excluded)
ERROR_CLASSES: dict[int, type[BrokerResponseError]] = _collect()


def error_for_code(code: int, message: str | None = None) -> BrokerResponseError:
    """The exception instance for a non-zero broker error code (unknown codes keep their number)."""
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        return _UnknownCodeError(code, message)
    return cls(message)


def for_code(code: int) -> type[BrokerResponseError]:
    """aiokafka's lookup: the class for an error code; ``UnknownError`` for a code not known."""
    return kafka_errors.get(code, UnknownServerError)


#: aiokafka's table: error code -> class, code 0 (``NoError``) included
kafka_errors: dict[int, type[BrokerResponseError]] = {0: NoError, **ERROR_CLASSES}


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
InvalidFetchRequestError = InvalidFetchSizeError
#: aiokafka's name for code 13 (Kafka calls it NETWORK_EXCEPTION)
StaleLeaderEpochCodeError = NetworkError
DelegationTokenAuthDisabled = DelegationTokenAuthDisabledError
DelegationTokenNotFound = DelegationTokenNotFoundError
DelegationTokenOwnerMismatch = DelegationTokenOwnerMismatchError
DelegationTokenRequestNotAllowed = DelegationTokenRequestNotAllowedError
DelegationTokenAuthorizationFailed = DelegationTokenAuthorizationFailedError
DelegationTokenExpired = DelegationTokenExpiredError
InvalidPrincipalType = InvalidPrincipalTypeError
NonEmptyGroup = NonEmptyGroupError
GroupIdNotFound = GroupIdNotFoundError
FetchSessionIdNotFound = FetchSessionIdNotFoundError
InvalidFetchSessionEpoch = InvalidFetchSessionEpochError
ListenerNotFound = ListenerNotFoundError
MemberIdRequired = MemberIdRequiredError

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
    "for_code",
    "kafka_errors",
    "NoError",
    # aiokafka's client-side errors
    "AuthenticationFailedError",
    "AuthenticationMethodNotSupported",
    "Cancelled",
    "CommitFailedError",
    "ConsumerStoppedError",
    "CorrelationIdError",
    "IllegalArgumentError",
    "IllegalOperation",
    "IllegalStateError",
    "IncompatibleBrokerVersion",
    "KafkaUnavailableError",
    "MetadataEmptyBrokerList",
    "NoBrokersAvailable",
    "NodeNotReadyError",
    "NoOffsetForPartitionError",
    "ProducerClosed",
    "ProducerFenced",
    "QuotaViolationError",
    "RecordTooLargeError",
    "StaleMetadata",
    "TooManyInFlightRequests",
    "UnrecognizedBrokerVersion",
    # aiokafka's names of broker error classes
    "UnknownError",
    "NotLeaderForPartitionError",
    "MessageSizeTooLargeError",
    "NetworkExceptionError",
    "GroupLoadInProgressError",
    "GroupCoordinatorNotAvailableError",
    "NotCoordinatorForGroupError",
    "CorruptRecordException",
    "InvalidMessageError",
    "InvalidReplicationAssignmentError",
    "InvalidConfigurationError",
    "OutOfOrderSequenceNumber",
    "DuplicateSequenceNumber",
    "InvalidProducerEpoch",
    "InvalidTxnState",
    "InvalidProducerIdMapping",
    "InvalidTransactionTimeout",
    "ConcurrentTransactions",
    "TransactionCoordinatorFenced",
    "TransactionalIdAuthorizationFailed",
    "SecurityDisabled",
    "OperationNotAttempted",
    "LogDirNotFound",
    "SaslAuthenticationFailed",
    "UnknownProducerId",
    "ReassignmentInProgress",
    "InvalidFetchRequestError",
    "StaleLeaderEpochCodeError",
    "DelegationTokenAuthDisabled",
    "DelegationTokenNotFound",
    "DelegationTokenOwnerMismatch",
    "DelegationTokenRequestNotAllowed",
    "DelegationTokenAuthorizationFailed",
    "DelegationTokenExpired",
    "InvalidPrincipalType",
    "NonEmptyGroup",
    "GroupIdNotFound",
    "FetchSessionIdNotFound",
    "InvalidFetchSessionEpoch",
    "ListenerNotFound",
    "MemberIdRequired",
    *_CODE_NAMES,
]
