"""Value types of the admin API (aiokafka-compatible names where aiokafka has them)."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import IllegalArgumentError
from aiokafka_lead.metadata.model import BrokerNode
from aiokafka_lead.structs import TopicPartition


@dataclass(slots=True)
class NewTopic:
    """A topic to create (aiokafka.admin.NewTopic: same positional order and keywords).

    ``num_partitions`` / ``replication_factor`` of -1 leave them to the broker's defaults
    (KIP-464), or to ``replica_assignments`` ({partition: [broker ids]}), which cannot be
    combined with both counts (``IllegalArgumentError``, as aiokafka). ``replica_assignments``
    and ``topic_configs`` are ``{}`` when not given.
    """

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignments: dict[int, list[int]] = field(default_factory=dict)
    topic_configs: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.replica_assignments = self.replica_assignments or {}
        self.topic_configs = self.topic_configs or {}
        if self.replica_assignments and self.num_partitions != -1 and self.replication_factor != -1:
            raise IllegalArgumentError(
                f"topic {self.name!r}: either num_partitions/replication_factor or replica_assignments "
                "(set the counts to -1 with replica_assignments)"
            )


@dataclass(slots=True)
class NewPartitions:
    """Grow a topic to ``total_count`` partitions (aiokafka.admin.NewPartitions)."""

    total_count: int
    new_assignments: list[list[int]] | None = None


class ConfigResourceType(enum.IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


@dataclass(slots=True)
class ConfigResource:
    """A resource whose configuration to describe or alter (aiokafka.admin.ConfigResource).

    ``resource_type`` may be given as the enum, its name (``"topic"``, any case) or its
    code; it is stored as a :class:`ConfigResourceType`, as aiokafka does.
    """

    resource_type: ConfigResourceType
    name: str
    configs: dict[str, str | None] | None = None

    def __init__(
        self,
        resource_type: ConfigResourceType | str | int,
        name: str,
        configs: dict[str, str | None] | None = None,
    ) -> None:
        self.resource_type = _resource_type(resource_type)
        self.name = name
        self.configs = configs

    @property
    def type_code(self) -> int:
        return int(self.resource_type)


class UnknownResourceTypeError(KeyError, ValueError):
    """A config resource type that does not exist: a KeyError, as aiokafka raises, and a
    ValueError."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _resource_type(value: ConfigResourceType | str | int) -> ConfigResourceType:
    try:
        if isinstance(value, ConfigResourceType):
            return value
        if isinstance(value, str):
            return ConfigResourceType[value.upper()]
        return ConfigResourceType(value)
    except (KeyError, ValueError):
        known = ", ".join(t.name for t in ConfigResourceType)
        raise UnknownResourceTypeError(f"unknown config resource type {value!r} (known: {known})") from None


@dataclass(slots=True)
class RecordsToDelete:
    """Delete the records of a partition before ``before_offset`` (aiokafka.admin.RecordsToDelete)."""

    before_offset: int


class AlterConfigOp(enum.IntEnum):
    """IncrementalAlterConfigs operations (KIP-339)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    read_only: bool = False
    is_sensitive: bool = False
    source: int = -1


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: tuple[PartitionDescription, ...]


@dataclass(frozen=True, slots=True)
class BrokerDescription(BrokerNode):
    """A broker as ``describe_cluster`` reports it: a metadata broker node."""


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str
    controller_id: int
    brokers: tuple[BrokerDescription, ...]


class ElectionType(enum.IntEnum):
    """KIP-460: which replica to elect."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class ElectionResult:
    """One partition's outcome. ELECTION_NOT_NEEDED (84) counts as success."""

    tp: TopicPartition
    error_code: int = 0
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_code in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


class OffsetSpec:
    """What ``list_offsets`` asks for: EARLIEST, LATEST, MAX_TIMESTAMP or a timestamp (ms)."""

    EARLIEST = -2
    LATEST = -1
    MAX_TIMESTAMP = -3
    EARLIEST_LOCAL = -4
    LATEST_TIERED = -5


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None = None
    group_type: str | None = None


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    #: the classic assignment as sent (ConsumerProtocolAssignment bytes); b"" in consumer groups
    assignment: bytes
    #: the partitions the member owns (decoded; for classic consumer groups too)
    partitions: frozenset[TopicPartition] = frozenset()
    #: consumer groups (KIP-848): member epoch, target assignment, subscription
    member_epoch: int = -1
    target_partitions: frozenset[TopicPartition] = frozenset()
    subscribed_topics: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    #: the classic protocol (assignor) name, or the broker-side assignor of a consumer group
    protocol: str
    members: tuple[MemberDescription, ...] = field(default_factory=tuple)
    #: "classic" or "consumer" (KIP-848)
    group_type: str = "classic"
    #: consumer groups: the group epoch and the epoch of the target assignment
    group_epoch: int = -1
    assignment_epoch: int = -1
