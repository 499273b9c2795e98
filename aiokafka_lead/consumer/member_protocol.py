"""The consumer protocol's member metadata and assignment in aiokafka's shapes.

An aiokafka-style assignor (:class:`~aiokafka_lead.consumer.assignor_base.AbstractPartitionAssignor`)
returns a :class:`ConsumerProtocolMemberMetadata` from ``metadata(topics)``, receives one
per member in ``assign()``, and returns a :class:`ConsumerProtocolMemberAssignment` per
member. Both encode to and decode from Kafka's ``ConsumerProtocolSubscription`` /
``ConsumerProtocolAssignment`` bytes (int16 version prefix, then the body), so they are
the bytes Java and aiokafka members exchange.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, NamedTuple

from aiokafka_lead.protocol.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from aiokafka_lead.structs import TopicPartition

_MAX_VERSION = 3


def _wire_version(version: int) -> int:
    return min(max(version, 0), _MAX_VERSION)


class _Fields:
    """Equality and repr over ``__slots__`` (version first, as aiokafka shows them); mutable,
    so unhashable, as aiokafka's."""

    __slots__ = ()
    _SHOWN: ClassVar[tuple[str, ...]]

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._SHOWN)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._SHOWN)
        return f"{type(self).__name__}({shown})"


class ConsumerProtocolMemberMetadata(_Fields):
    """A member's subscription: protocol version, subscribed topics, assignor user data."""

    __slots__ = ("subscription", "user_data", "version")
    _SHOWN = ("version", "subscription", "user_data")

    def __init__(self, version: int = 0, subscription: Iterable[str] = (), user_data: bytes = b"") -> None:
        self.version = version
        self.subscription = list(subscription)
        self.user_data = user_data

    def encode(self) -> bytes:
        body = ConsumerProtocolSubscription(topics=list(self.subscription), user_data=self.user_data)
        return body.encode_with_version(_wire_version(self.version))

    @classmethod
    def decode(cls, data: bytes) -> ConsumerProtocolMemberMetadata:
        version, body = ConsumerProtocolSubscription.decode_with_version(data)
        return cls(version, body.topics, body.user_data or b"")


class ConsumerProtocolMemberAssignment(_Fields):
    """A member's assignment: protocol version, ``[(topic, [partition, ...]), ...]``, user data."""

    __slots__ = ("assignment", "user_data", "version")
    _SHOWN = ("version", "assignment", "user_data")

    class Assignment(NamedTuple):
        topic: str
        partitions: list[int]

    def __init__(
        self,
        version: int = 0,
        assignment: Iterable[tuple[str, Iterable[int]]] = (),
        user_data: bytes = b"",
    ) -> None:
        self.version = version
        self.assignment = [self.Assignment(topic, list(parts)) for topic, parts in assignment]
        self.user_data = user_data

    def partitions(self) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for topic, parts in self.assignment for p in parts]

    def encode(self) -> bytes:
        body = ConsumerProtocolAssignment(
            assigned_partitions=[
                ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=list(parts))
                for topic, parts in self.assignment
            ],
            user_data=self.user_data,
        )
        return body.encode_with_version(_wire_version(self.version))

    @classmethod
    def decode(cls, data: bytes) -> ConsumerProtocolMemberAssignment:
        version, body = ConsumerProtocolAssignment.decode_with_version(data)
        assignment = [(t.topic, t.partitions) for t in body.assigned_partitions]
        return cls(version, assignment, body.user_data or b"")


class ConsumerProtocol:
    """The classic group's protocol type and the two shapes above (aiokafka's constants)."""

    PROTOCOL_TYPE = "consumer"
    ASSIGNMENT_STRATEGIES = ("range", "roundrobin")
    METADATA = ConsumerProtocolMemberMetadata
    ASSIGNMENT = ConsumerProtocolMemberAssignment
