"""OpenTelemetry's messaging semantic conventions as the spans and metrics use them: the
attribute keys, the operation names, and the attributes of each kind of span.

The keys and values are those opentelemetry-instrumentation-aiokafka (0.66b1, semantic
conventions 1.27) sets for aiokafka, so a query written for aiokafka's spans finds ours:
``messaging.operation.type`` is ``publish`` for a send, the record's offset is
``messaging.kafka.message.offset`` and ``server.address`` is the client's
``bootstrap_servers`` as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.util.types import AttributeValue

Attributes = dict[str, AttributeValue]

SCHEMA_URL = "https://opentelemetry.io/schemas/1.27.0"

# attribute keys
SYSTEM = "messaging.system"
SERVER_ADDRESS = "server.address"
CLIENT_ID = "messaging.client.id"
DESTINATION = "messaging.destination.name"
PARTITION = "messaging.destination.partition.id"
MESSAGE_KEY = "messaging.kafka.message.key"
MESSAGE_OFFSET = "messaging.kafka.message.offset"
MESSAGE_ID = "messaging.message.id"
BATCH_COUNT = "messaging.batch.message_count"
GROUP = "messaging.consumer.group.name"
OPERATION_NAME = "messaging.operation.name"
OPERATION_TYPE = "messaging.operation.type"
ERROR_TYPE = "error.type"

KAFKA = "kafka"
# operation names (the span's name is "<destination> <operation name>" where there is one)
SEND = "send"
RECEIVE = "receive"
COMMIT_TRANSACTION = "commit_transaction"
ABORT_TRANSACTION = "abort_transaction"
SEND_OFFSETS = "send_offsets_to_transaction"
TRANSACTION = "transaction"
# operation types
PUBLISH = "publish"
RECEIVE_TYPE = "receive"

# metric instruments
SENT_MESSAGES = "messaging.client.sent.messages"
CONSUMED_MESSAGES = "messaging.client.consumed.messages"
OPERATION_DURATION = "messaging.client.operation.duration"
#: the conventions' advice for messaging.client.operation.duration (seconds)
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)


def key_text(key: Any) -> str | None:
    """``messaging.kafka.message.key``: bytes as UTF-8 text, anything else as ``str()``
    (bytes that are not UTF-8 too, as aiokafka's instrumentation writes them)."""
    if key is None:
        return None
    if isinstance(key, bytes):
        try:
            return key.decode()
        except UnicodeDecodeError:
            pass
    return str(key)


def span_name(destination: str, operation: str) -> str:
    return f"{destination} {operation}"


@dataclass(frozen=True, slots=True)
class ClientDescription:
    """What every span of one client carries, computed once per client; what its spans of one
    topic (or partition) share, computed once per topic (partition)."""

    base: Attributes  # system, server address, client id
    group: str | None
    _sending: dict[str, tuple[str, Attributes]] = field(default_factory=dict)
    _receiving: dict[tuple[str, int], tuple[str, Attributes]] = field(default_factory=dict)

    @classmethod
    def of(
        cls, bootstrap_servers: str | Sequence[str], client_id: str | None, group: str | None
    ) -> ClientDescription:
        servers = bootstrap_servers if isinstance(bootstrap_servers, str) else list(bootstrap_servers)
        base: Attributes = {SYSTEM: KAFKA, SERVER_ADDRESS: json.dumps(servers)}
        if client_id is not None:
            base[CLIENT_ID] = client_id
        return cls(base, group)

    def destination(self, topic: str, partition: int | None) -> Attributes:
        """The attributes of every span about one topic (and partition, when known)."""
        attributes = {**self.base, DESTINATION: topic}
        if partition is not None:
            attributes[PARTITION] = str(partition)
        return attributes

    def sending(self, topic: str) -> tuple[str, Attributes]:
        """The name of a PRODUCER span to ``topic`` and its attributes but the key and the
        partition (known once the record is queued). Shared: not to be changed."""
        found = self._sending.get(topic)
        if found is None:
            attributes = self.destination(topic, None)
            attributes[OPERATION_NAME] = SEND
            attributes[OPERATION_TYPE] = PUBLISH
            found = self._sending[topic] = (span_name(topic, SEND), attributes)
        return found

    def send(self, topic: str, key: str | None) -> Attributes:
        """A PRODUCER span's attributes but its partition."""
        attributes = self.sending(topic)[1]
        return attributes if key is None else {**attributes, MESSAGE_KEY: key}

    def _receive(self, attributes: Attributes) -> Attributes:
        if self.group is not None:
            attributes[GROUP] = self.group
        attributes[OPERATION_NAME] = RECEIVE
        attributes[OPERATION_TYPE] = RECEIVE_TYPE
        return attributes

    def receiving(self, topic: str, partition: int) -> tuple[str, Attributes]:
        """The name of a CONSUMER span of a record of ``topic`` and what its attributes share
        with the partition's other records'. Shared: not to be changed."""
        found = self._receiving.get((topic, partition))
        if found is None:
            attributes = self._receive(self.destination(topic, partition))
            found = self._receiving[topic, partition] = (span_name(topic, RECEIVE), attributes)
        return found

    def record(self, topic: str, partition: int, offset: int, key: str | None) -> Attributes:
        """The CONSUMER span of one record read."""
        attributes = {
            **self.receiving(topic, partition)[1],
            MESSAGE_OFFSET: offset,
            MESSAGE_ID: f"{topic}.{partition}.{offset}",
        }
        if key is not None:
            attributes[MESSAGE_KEY] = key
        return attributes

    def poll(self, count: int) -> Attributes:
        """The CONSUMER span of one ``getmany()`` that returned ``count`` records."""
        return self._receive({**self.base, BATCH_COUNT: count})

    def partition_batch(self, topic: str, partition: int, count: int) -> Attributes:
        """The CONSUMER span of one partition's records within a ``getmany()``."""
        return {**self.receiving(topic, partition)[1], BATCH_COUNT: count}

    def transaction(self, operation: str) -> Attributes:
        return {**self.base, OPERATION_NAME: operation}
