"""One exception class per Kafka 4.4 error code (``Errors.java``), public through
:mod:`aiokafka_lead.errors`. Written out class by class so type checkers see every name."""

from __future__ import annotations

from aiokafka_lead._errors_base import BrokerResponseError, CorruptRecordError, ProducerFenced


class UnknownServerError(BrokerResponseError):
    errno = -1
    error_name = "UNKNOWN_SERVER_ERROR"


class OffsetOutOfRangeError(BrokerResponseError):
    errno = 1
    error_name = "OFFSET_OUT_OF_RANGE"


class CorruptMessageError(BrokerResponseError, CorruptRecordError):
    errno = 2
    error_name = "CORRUPT_MESSAGE"
    retriable = True


class UnknownTopicOrPartitionError(BrokerResponseError):
    errno = 3
    error_name = "UNKNOWN_TOPIC_OR_PARTITION"
    retriable = True
    invalid_metadata = True


class InvalidFetchSizeError(BrokerResponseError):
    errno = 4
    error_name = "INVALID_FETCH_SIZE"


class LeaderNotAvailableError(BrokerResponseError):
    errno = 5
    error_name = "LEADER_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class NotLeaderOrFollowerError(BrokerResponseError):
    errno = 6
    error_name = "NOT_LEADER_OR_FOLLOWER"
    retriable = True
    invalid_metadata = True


class RequestTimedOutError(BrokerResponseError):
    errno = 7
    error_name = "REQUEST_TIMED_OUT"
    retriable = True


class BrokerNotAvailableError(BrokerResponseError):
    errno = 8
    error_name = "BROKER_NOT_AVAILABLE"


class ReplicaNotAvailableError(BrokerResponseError):
    errno = 9
    error_name = "REPLICA_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class MessageTooLargeError(BrokerResponseError):
    errno = 10
    error_name = "MESSAGE_TOO_LARGE"


class StaleControllerEpochError(BrokerResponseError):
    errno = 11
    error_name = "STALE_CONTROLLER_EPOCH"


class OffsetMetadataTooLargeError(BrokerResponseError):
    errno = 12
    error_name = "OFFSET_METADATA_TOO_LARGE"


class NetworkError(BrokerResponseError):
    errno = 13
    error_name = "NETWORK_EXCEPTION"
    retriable = True
    invalid_metadata = True


class CoordinatorLoadInProgressError(BrokerResponseError):
    errno = 14
    error_name = "COORDINATOR_LOAD_IN_PROGRESS"
    retriable = True


class CoordinatorNotAvailableError(BrokerResponseError):
    errno = 15
    error_name = "COORDINATOR_NOT_AVAILABLE"
    retriable = True


class NotCoordinatorError(BrokerResponseError):
    errno = 16
    error_name = "NOT_COORDINATOR"
    retriable = True


class InvalidTopicError(BrokerResponseError):
    errno = 17
    error_name = "INVALID_TOPIC_EXCEPTION"


class RecordListTooLargeError(BrokerResponseError):
    errno = 18
    error_name = "RECORD_LIST_TOO_LARGE"


class NotEnoughReplicasError(BrokerResponseError):
    errno = 19
    error_name = "NOT_ENOUGH_REPLICAS"
    retriable = True


class NotEnoughReplicasAfterAppendError(BrokerResponseError):
    errno = 20
    error_name = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    retriable = True


class InvalidRequiredAcksError(BrokerResponseError):
    errno = 21
    error_name = "INVALID_REQUIRED_ACKS"


class IllegalGenerationError(BrokerResponseError):
    errno = 22
    error_name = "ILLEGAL_GENERATION"


class InconsistentGroupProtocolError(BrokerResponseError):
    errno = 23
    error_name = "INCONSISTENT_GROUP_PROTOCOL"


class InvalidGroupIdError(BrokerResponseError):
    errno = 24
    error_name = "INVALID_GROUP_ID"


class UnknownMemberIdError(BrokerResponseError):
    errno = 25
    error_name = "UNKNOWN_MEMBER_ID"


class InvalidSessionTimeoutError(BrokerResponseError):
    errno = 26
    error_name = "INVALID_SESSION_TIMEOUT"


class RebalanceInProgressError(BrokerResponseError):
    errno = 27
    error_name = "REBALANCE_IN_PROGRESS"


class InvalidCommitOffsetSizeError(BrokerResponseError):
    errno = 28
    error_name = "INVALID_COMMIT_OFFSET_SIZE"


class TopicAuthorizationFailedError(BrokerResponseError):
    errno = 29
    error_name = "TOPIC_AUTHORIZATION_FAILED"


class GroupAuthorizationFailedError(BrokerResponseError):
    errno = 30
    error_name = "GROUP_AUTHORIZATION_FAILED"


class ClusterAuthorizationFailedError(BrokerResponseError):
    errno = 31
    error_name = "CLUSTER_AUTHORIZATION_FAILED"


class InvalidTimestampError(BrokerResponseError):
    errno = 32
    error_name = "INVALID_TIMESTAMP"


class UnsupportedSaslMechanismError(BrokerResponseError):
    errno = 33
    error_name = "UNSUPPORTED_SASL_MECHANISM"


class IllegalSaslStateError(BrokerResponseError):
    errno = 34
    error_name = "ILLEGAL_SASL_STATE"


class UnsupportedVersionError(BrokerResponseError):
    errno = 35
    error_name = "UNSUPPORTED_VERSION"


class TopicAlreadyExistsError(BrokerResponseError):
    errno = 36
    error_name = "TOPIC_ALREADY_EXISTS"


class InvalidPartitionsError(BrokerResponseError):
    errno = 37
    error_name = "INVALID_PARTITIONS"


class InvalidReplicationFactorError(BrokerResponseError):
    errno = 38
    error_name = "INVALID_REPLICATION_FACTOR"


class InvalidReplicaAssignmentError(BrokerResponseError):
    errno = 39
    error_name = "INVALID_REPLICA_ASSIGNMENT"


class InvalidConfigError(BrokerResponseError):
    errno = 40
    error_name = "INVALID_CONFIG"


class NotControllerError(BrokerResponseError):
    errno = 41
    error_name = "NOT_CONTROLLER"
    retriable = True


class InvalidRequestError(BrokerResponseError):
    errno = 42
    error_name = "INVALID_REQUEST"


class UnsupportedForMessageFormatError(BrokerResponseError):
    errno = 43
    error_name = "UNSUPPORTED_FOR_MESSAGE_FORMAT"


class PolicyViolationError(BrokerResponseError):
    errno = 44
    error_name = "POLICY_VIOLATION"


class OutOfOrderSequenceNumberError(BrokerResponseError):
    errno = 45
    error_name = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class DuplicateSequenceNumberError(BrokerResponseError):
    errno = 46
    error_name = "DUPLICATE_SEQUENCE_NUMBER"


class InvalidProducerEpochError(BrokerResponseError, ProducerFenced):
    errno = 47
    error_name = "INVALID_PRODUCER_EPOCH"


class InvalidTxnStateError(BrokerResponseError):
    errno = 48
    error_name = "INVALID_TXN_STATE"


class InvalidProducerIdMappingError(BrokerResponseError):
    errno = 49
    error_name = "INVALID_PRODUCER_ID_MAPPING"


class InvalidTransactionTimeoutError(BrokerResponseError):
    errno = 50
    error_name = "INVALID_TRANSACTION_TIMEOUT"


class ConcurrentTransactionsError(BrokerResponseError):
    errno = 51
    error_name = "CONCURRENT_TRANSACTIONS"
    retriable = True


class TransactionCoordinatorFencedError(BrokerResponseError):
    errno = 52
    error_name = "TRANSACTION_COORDINATOR_FENCED"


class TransactionalIdAuthorizationFailedError(BrokerResponseError):
    errno = 53
    error_name = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


class SecurityDisabledError(BrokerResponseError):
    errno = 54
    error_name = "SECURITY_DISABLED"


class OperationNotAttemptedError(BrokerResponseError):
    errno = 55
    error_name = "OPERATION_NOT_ATTEMPTED"


class KafkaStorageError(BrokerResponseError):
    errno = 56
    error_name = "KAFKA_STORAGE_ERROR"
    retriable = True
    invalid_metadata = True


class LogDirNotFoundError(BrokerResponseError):
    errno = 57
    error_name = "LOG_DIR_NOT_FOUND"


class SaslAuthenticationFailedError(BrokerResponseError):
    errno = 58
    error_name = "SASL_AUTHENTICATION_FAILED"


class UnknownProducerIdError(BrokerResponseError):
    errno = 59
    error_name = "UNKNOWN_PRODUCER_ID"


class ReassignmentInProgressError(BrokerResponseError):
    errno = 60
    error_name = "REASSIGNMENT_IN_PROGRESS"


class DelegationTokenAuthDisabledError(BrokerResponseError):
    errno = 61
    error_name = "DELEGATION_TOKEN_AUTH_DISABLED"


class DelegationTokenNotFoundError(BrokerResponseError):
    errno = 62
    error_name = "DELEGATION_TOKEN_NOT_FOUND"


class DelegationTokenOwnerMismatchError(BrokerResponseError):
    errno = 63
    error_name = "DELEGATION_TOKEN_OWNER_MISMATCH"


class DelegationTokenRequestNotAllowedError(BrokerResponseError):
    errno = 64
    error_name = "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"


class DelegationTokenAuthorizationFailedError(BrokerResponseError):
    errno = 65
    error_name = "DELEGATION_TOKEN_AUTHORIZATION_FAILED"


class DelegationTokenExpiredError(BrokerResponseError):
    errno = 66
    error_name = "DELEGATION_TOKEN_EXPIRED"


class InvalidPrincipalTypeError(BrokerResponseError):
    errno = 67
    error_name = "INVALID_PRINCIPAL_TYPE"


class NonEmptyGroupError(BrokerResponseError):
    errno = 68
    error_name = "NON_EMPTY_GROUP"


class GroupIdNotFoundError(BrokerResponseError):
    errno = 69
    error_name = "GROUP_ID_NOT_FOUND"


class FetchSessionIdNotFoundError(BrokerResponseError):
    errno = 70
    error_name = "FETCH_SESSION_ID_NOT_FOUND"
    retriable = True


class InvalidFetchSessionEpochError(BrokerResponseError):
    errno = 71
    error_name = "INVALID_FETCH_SESSION_EPOCH"
    retriable = True


class ListenerNotFoundError(BrokerResponseError):
    errno = 72
    error_name = "LISTENER_NOT_FOUND"
    retriable = True
    invalid_metadata = True


class TopicDeletionDisabledError(BrokerResponseError):
    errno = 73
    error_name = "TOPIC_DELETION_DISABLED"


class FencedLeaderEpochError(BrokerResponseError):
    errno = 74
    error_name = "FENCED_LEADER_EPOCH"
    retriable = True
    invalid_metadata = True


class UnknownLeaderEpochError(BrokerResponseError):
    errno = 75
    error_name = "UNKNOWN_LEADER_EPOCH"
    retriable = True


class UnsupportedCompressionTypeError(BrokerResponseError):
    errno = 76
    error_name = "UNSUPPORTED_COMPRESSION_TYPE"


class StaleBrokerEpochError(BrokerResponseError):
    errno = 77
    error_name = "STALE_BROKER_EPOCH"


class OffsetNotAvailableError(BrokerResponseError):
    errno = 78
    error_name = "OFFSET_NOT_AVAILABLE"
    retriable = True


class MemberIdRequiredError(BrokerResponseError):
    errno = 79
    error_name = "MEMBER_ID_REQUIRED"


class PreferredLeaderNotAvailableError(BrokerResponseError):
    errno = 80
    error_name = "PREFERRED_LEADER_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class GroupMaxSizeReachedError(BrokerResponseError):
    errno = 81
    error_name = "GROUP_MAX_SIZE_REACHED"


class FencedInstanceIdError(BrokerResponseError):
    errno = 82
    error_name = "FENCED_INSTANCE_ID"


class EligibleLeadersNotAvailableError(BrokerResponseError):
    errno = 83
    error_name = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class ElectionNotNeededError(BrokerResponseError):
    errno = 84
    error_name = "ELECTION_NOT_NEEDED"
    retriable = True
    invalid_metadata = True


class NoReassignmentInProgressError(BrokerResponseError):
    errno = 85
    error_name = "NO_REASSIGNMENT_IN_PROGRESS"


class GroupSubscribedToTopicError(BrokerResponseError):
    errno = 86
    error_name = "GROUP_SUBSCRIBED_TO_TOPIC"


class InvalidRecordError(BrokerResponseError):
    errno = 87
    error_name = "INVALID_RECORD"


class UnstableOffsetCommitError(BrokerResponseError):
    errno = 88
    error_name = "UNSTABLE_OFFSET_COMMIT"
    retriable = True


class ThrottlingQuotaExceededError(BrokerResponseError):
    errno = 89
    error_name = "THROTTLING_QUOTA_EXCEEDED"
    retriable = True


class ProducerFencedError(BrokerResponseError, ProducerFenced):
    errno = 90
    error_name = "PRODUCER_FENCED"


class ResourceNotFoundError(BrokerResponseError):
    errno = 91
    error_name = "RESOURCE_NOT_FOUND"


class DuplicateResourceError(BrokerResponseError):
    errno = 92
    error_name = "DUPLICATE_RESOURCE"


class UnacceptableCredentialError(BrokerResponseError):
    errno = 93
    error_name = "UNACCEPTABLE_CREDENTIAL"


class InconsistentVoterSetError(BrokerResponseError):
    errno = 94
    error_name = "INCONSISTENT_VOTER_SET"


class InvalidUpdateVersionError(BrokerResponseError):
    errno = 95
    error_name = "INVALID_UPDATE_VERSION"


class FeatureUpdateFailedError(BrokerResponseError):
    errno = 96
    error_name = "FEATURE_UPDATE_FAILED"


class PrincipalDeserializationFailureError(BrokerResponseError):
    errno = 97
    error_name = "PRINCIPAL_DESERIALIZATION_FAILURE"


class SnapshotNotFoundError(BrokerResponseError):
    errno = 98
    error_name = "SNAPSHOT_NOT_FOUND"


class PositionOutOfRangeError(BrokerResponseError):
    errno = 99
    error_name = "POSITION_OUT_OF_RANGE"


class UnknownTopicIdError(BrokerResponseError):
    errno = 100
    error_name = "UNKNOWN_TOPIC_ID"
    retriable = True
    invalid_metadata = True


class DuplicateBrokerRegistrationError(BrokerResponseError):
    errno = 101
    error_name = "DUPLICATE_BROKER_REGISTRATION"


class BrokerIdNotRegisteredError(BrokerResponseError):
    errno = 102
    error_name = "BROKER_ID_NOT_REGISTERED"


class InconsistentTopicIdError(BrokerResponseError):
    errno = 103
    error_name = "INCONSISTENT_TOPIC_ID"
    retriable = True
    invalid_metadata = True


class InconsistentClusterIdError(BrokerResponseError):
    errno = 104
    error_name = "INCONSISTENT_CLUSTER_ID"


class TransactionalIdNotFoundError(BrokerResponseError):
    errno = 105
    error_name = "TRANSACTIONAL_ID_NOT_FOUND"


class FetchSessionTopicIdError(BrokerResponseError):
    errno = 106
    error_name = "FETCH_SESSION_TOPIC_ID_ERROR"
    retriable = True


class IneligibleReplicaError(BrokerResponseError):
    errno = 107
    error_name = "INELIGIBLE_REPLICA"


class NewLeaderElectedError(BrokerResponseError):
    errno = 108
    error_name = "NEW_LEADER_ELECTED"


class OffsetMovedToTieredStorageError(BrokerResponseError):
    errno = 109
    error_name = "OFFSET_MOVED_TO_TIERED_STORAGE"


class FencedMemberEpochError(BrokerResponseError):
    errno = 110
    error_name = "FENCED_MEMBER_EPOCH"


class UnreleasedInstanceIdError(BrokerResponseError):
    errno = 111
    error_name = "UNRELEASED_INSTANCE_ID"


class UnsupportedAssignorError(BrokerResponseError):
    errno = 112
    error_name = "UNSUPPORTED_ASSIGNOR"


class StaleMemberEpochError(BrokerResponseError):
    errno = 113
    error_name = "STALE_MEMBER_EPOCH"


class MismatchedEndpointTypeError(BrokerResponseError):
    errno = 114
    error_name = "MISMATCHED_ENDPOINT_TYPE"


class UnsupportedEndpointTypeError(BrokerResponseError):
    errno = 115
    error_name = "UNSUPPORTED_ENDPOINT_TYPE"


class UnknownControllerIdError(BrokerResponseError):
    errno = 116
    error_name = "UNKNOWN_CONTROLLER_ID"


class UnknownSubscriptionIdError(BrokerResponseError):
    errno = 117
    error_name = "UNKNOWN_SUBSCRIPTION_ID"


class TelemetryTooLargeError(BrokerResponseError):
    errno = 118
    error_name = "TELEMETRY_TOO_LARGE"


class InvalidRegistrationError(BrokerResponseError):
    errno = 119
    error_name = "INVALID_REGISTRATION"


class TransactionAbortableError(BrokerResponseError):
    errno = 120
    error_name = "TRANSACTION_ABORTABLE"


class InvalidRecordStateError(BrokerResponseError):
    errno = 121
    error_name = "INVALID_RECORD_STATE"


class ShareSessionNotFoundError(BrokerResponseError):
    errno = 122
    error_name = "SHARE_SESSION_NOT_FOUND"
    retriable = True


class InvalidShareSessionEpochError(BrokerResponseError):
    errno = 123
    error_name = "INVALID_SHARE_SESSION_EPOCH"
    retriable = True


class FencedStateEpochError(BrokerResponseError):
    errno = 124
    error_name = "FENCED_STATE_EPOCH"


class InvalidVoterKeyError(BrokerResponseError):
    errno = 125
    error_name = "INVALID_VOTER_KEY"


class DuplicateVoterError(BrokerResponseError):
    errno = 126
    error_name = "DUPLICATE_VOTER"


class VoterNotFoundError(BrokerResponseError):
    errno = 127
    error_name = "VOTER_NOT_FOUND"


class InvalidRegularExpressionError(BrokerResponseError):
    errno = 128
    error_name = "INVALID_REGULAR_EXPRESSION"


class RebootstrapRequiredError(BrokerResponseError):
    errno = 129
    error_name = "REBOOTSTRAP_REQUIRED"


class StreamsInvalidTopologyError(BrokerResponseError):
    errno = 130
    error_name = "STREAMS_INVALID_TOPOLOGY"


class StreamsInvalidTopologyEpochError(BrokerResponseError):
    errno = 131
    error_name = "STREAMS_INVALID_TOPOLOGY_EPOCH"


class StreamsTopologyFencedError(BrokerResponseError):
    errno = 132
    error_name = "STREAMS_TOPOLOGY_FENCED"


class ShareSessionLimitReachedError(BrokerResponseError):
    errno = 133
    error_name = "SHARE_SESSION_LIMIT_REACHED"
    retriable = True


class GroupDeletionFailedError(BrokerResponseError):
    errno = 134
    error_name = "GROUP_DELETION_FAILED"


class StreamsTopologyDescriptionUpdateFailedError(BrokerResponseError):
    errno = 135
    error_name = "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED"


class ControllerIdNotRegisteredError(BrokerResponseError):
    errno = 136
    error_name = "CONTROLLER_ID_NOT_REGISTERED"


__all__ = [
    "BrokerIdNotRegisteredError",
    "BrokerNotAvailableError",
    "ClusterAuthorizationFailedError",
    "ConcurrentTransactionsError",
    "ControllerIdNotRegisteredError",
    "CoordinatorLoadInProgressError",
    "CoordinatorNotAvailableError",
    "CorruptMessageError",
    "DelegationTokenAuthDisabledError",
    "DelegationTokenAuthorizationFailedError",
    "DelegationTokenExpiredError",
    "DelegationTokenNotFoundError",
    "DelegationTokenOwnerMismatchError",
    "DelegationTokenRequestNotAllowedError",
    "DuplicateBrokerRegistrationError",
    "DuplicateResourceError",
    "DuplicateSequenceNumberError",
    "DuplicateVoterError",
    "ElectionNotNeededError",
    "EligibleLeadersNotAvailableError",
    "FeatureUpdateFailedError",
    "FencedInstanceIdError",
    "FencedLeaderEpochError",
    "FencedMemberEpochError",
    "FencedStateEpochError",
    "FetchSessionIdNotFoundError",
    "FetchSessionTopicIdError",
    "GroupAuthorizationFailedError",
    "GroupDeletionFailedError",
    "GroupIdNotFoundError",
    "GroupMaxSizeReachedError",
    "GroupSubscribedToTopicError",
    "IllegalGenerationError",
    "IllegalSaslStateError",
    "InconsistentClusterIdError",
    "InconsistentGroupProtocolError",
    "InconsistentTopicIdError",
    "InconsistentVoterSetError",
    "IneligibleReplicaError",
    "InvalidCommitOffsetSizeError",
    "InvalidConfigError",
    "InvalidFetchSessionEpochError",
    "InvalidFetchSizeError",
    "InvalidGroupIdError",
    "InvalidPartitionsError",
    "InvalidPrincipalTypeError",
    "InvalidProducerEpochError",
    "InvalidProducerIdMappingError",
    "InvalidRecordError",
    "InvalidRecordStateError",
    "InvalidRegistrationError",
    "InvalidRegularExpressionError",
    "InvalidReplicaAssignmentError",
    "InvalidReplicationFactorError",
    "InvalidRequestError",
    "InvalidRequiredAcksError",
    "InvalidSessionTimeoutError",
    "InvalidShareSessionEpochError",
    "InvalidTimestampError",
    "InvalidTopicError",
    "InvalidTransactionTimeoutError",
    "InvalidTxnStateError",
    "InvalidUpdateVersionError",
    "InvalidVoterKeyError",
    "KafkaStorageError",
    "LeaderNotAvailableError",
    "ListenerNotFoundError",
    "LogDirNotFoundError",
    "MemberIdRequiredError",
    "MessageTooLargeError",
    "MismatchedEndpointTypeError",
    "NetworkError",
    "NewLeaderElectedError",
    "NoReassignmentInProgressError",
    "NonEmptyGroupError",
    "NotControllerError",
    "NotCoordinatorError",
    "NotEnoughReplicasAfterAppendError",
    "NotEnoughReplicasError",
    "NotLeaderOrFollowerError",
    "OffsetMetadataTooLargeError",
    "OffsetMovedToTieredStorageError",
    "OffsetNotAvailableError",
    "OffsetOutOfRangeError",
    "OperationNotAttemptedError",
    "OutOfOrderSequenceNumberError",
    "PolicyViolationError",
    "PositionOutOfRangeError",
    "PreferredLeaderNotAvailableError",
    "PrincipalDeserializationFailureError",
    "ProducerFencedError",
    "ReassignmentInProgressError",
    "RebalanceInProgressError",
    "RebootstrapRequiredError",
    "RecordListTooLargeError",
    "ReplicaNotAvailableError",
    "RequestTimedOutError",
    "ResourceNotFoundError",
    "SaslAuthenticationFailedError",
    "SecurityDisabledError",
    "ShareSessionLimitReachedError",
    "ShareSessionNotFoundError",
    "SnapshotNotFoundError",
    "StaleBrokerEpochError",
    "StaleControllerEpochError",
    "StaleMemberEpochError",
    "StreamsInvalidTopologyEpochError",
    "StreamsInvalidTopologyError",
    "StreamsTopologyDescriptionUpdateFailedError",
    "StreamsTopologyFencedError",
    "TelemetryTooLargeError",
    "ThrottlingQuotaExceededError",
    "TopicAlreadyExistsError",
    "TopicAuthorizationFailedError",
    "TopicDeletionDisabledError",
    "TransactionAbortableError",
    "TransactionCoordinatorFencedError",
    "TransactionalIdAuthorizationFailedError",
    "TransactionalIdNotFoundError",
    "UnacceptableCredentialError",
    "UnknownControllerIdError",
    "UnknownLeaderEpochError",
    "UnknownMemberIdError",
    "UnknownProducerIdError",
    "UnknownServerError",
    "UnknownSubscriptionIdError",
    "UnknownTopicIdError",
    "UnknownTopicOrPartitionError",
    "UnreleasedInstanceIdError",
    "UnstableOffsetCommitError",
    "UnsupportedAssignorError",
    "UnsupportedCompressionTypeError",
    "UnsupportedEndpointTypeError",
    "UnsupportedForMessageFormatError",
    "UnsupportedSaslMechanismError",
    "UnsupportedVersionError",
    "VoterNotFoundError",
]
