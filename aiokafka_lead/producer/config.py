"""The producer's configuration: the shared connection settings plus the producer's own
options, each declared once (see :mod:`aiokafka_lead.config.options`).

Defaults follow the modern Java client where aiokafka's are unsafe: ``acks="all"`` and
idempotence on (it turns itself off, as in Java, only when acks is set to 0 or 1 without
asking for idempotence explicitly).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Self

from aiokafka_lead.config.options import NON_NEGATIVE, POSITIVE, choices, is_async_callable, option, override
from aiokafka_lead.errors import KafkaConfigurationError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.producer.partitioner import Partitioner
from aiokafka_lead.records.compression import CompressionType, require_codec

COMPRESSION = {
    None: CompressionType.NONE,
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}
ACKS = {"all": -1, -1: -1, "-1": -1, 0: 0, "0": 0, 1: 1, "1": 1}
#: ``acks`` left unset, as a value: aiokafka's default marker (``aiokafka.producer.producer._missing``,
#: which frameworks pass on); the producer takes it as its own default, ``"all"``
ACKS_UNSET: Final = object()
_ids = itertools.count(1)
#: Java's limit of in-flight requests per connection with idempotence
IDEMPOTENT_MAX_IN_FLIGHT = 5


@dataclass(frozen=True, kw_only=True)
class ProducerConfig(ConnectionConfig):
    """Everything an ``AIOKafkaProducer`` is configured with."""

    CLIENT = "producer"
    #: the constructor's keyword order, aiokafka's (the other keywords follow in declaration order)
    KEYWORD_ORDER = (
        "bootstrap_servers", "client_id", "metadata_max_age_ms", "request_timeout_ms", "api_version",
        "acks", "key_serializer", "value_serializer", "compression_type", "max_batch_size",
        "partitioner", "max_request_size", "linger_ms", "retry_backoff_ms", "retry_backoff_max_ms",
        "delivery_timeout_ms", "buffer_memory", "max_block_ms", "max_in_flight_requests_per_connection",
        "security_protocol", "ssl_context", "connections_max_idle_ms", "enable_idempotence",
        "transactional_id", "transaction_timeout_ms",
    )

    client_id: str | None = override(ConnectionConfig, "client_id", None)
    api_version: str | None = override(ConnectionConfig, "api_version", "auto", keyword_type="str")
    acks: int | str = option(
        "all", choices(*ACKS), "replicas that must have a record before it counts as sent: 0, 1 or 'all'"
    )
    key_serializer: Callable[[Any], bytes] | None = option(
        None, None, "turns a key into bytes; an async one is awaited with the topic and headers"
    )
    value_serializer: Callable[[Any], bytes] | None = option(
        None, None, "turns a value into bytes; an async one is awaited with the topic and headers"
    )
    compression_type: str | None = option(
        None, choices(*COMPRESSION), "batch compression: None, 'gzip', 'snappy', 'lz4' or 'zstd'"
    )
    max_batch_size: int = option(16384, POSITIVE, "bytes of records per partition batch")
    partitioner: Partitioner | None = option(
        None, None, "chooses a record's partition (None: murmur2 of the key, sticky without one)"
    )
    max_request_size: int = option(1_048_576, POSITIVE, "largest produce request (and record)")
    linger_ms: int = option(0, NON_NEGATIVE, "how long a batch waits for more records")
    delivery_timeout_ms: int = option(
        120_000, POSITIVE, "a record not acknowledged this long after send() fails (retries included)"
    )
    buffer_memory: int = option(32 * 1024 * 1024, POSITIVE, "bytes of records waiting to be sent")
    max_block_ms: int = option(
        60_000, NON_NEGATIVE, "how long send() waits for buffer space, and transactions for answers"
    )
    max_in_flight_requests_per_connection: int = option(
        5, POSITIVE, "produce requests in flight per connection (at most 5 with idempotence)"
    )
    enable_idempotence: bool | None = option(
        None, None, "exactly-once per partition (None: on unless acks is 0 or 1)"
    )
    transactional_id: str | None = option(None, None, "makes the producer transactional")
    transaction_timeout_ms: int = option(60_000, POSITIVE, "the coordinator aborts a transaction this old")
    enable_leader_hints: bool = option(
        True, None, "follow KIP-951 leader hints (False: wait for a metadata refresh, as before KIP-951)"
    )
    connections_per_broker: int = option(
        1, choices(1, 2), "connections a broker's produce requests may spread over"
    )

    @classmethod
    def build(cls, arguments: Mapping[str, Any], unknown: Mapping[str, Any] | None = None) -> Self:
        if arguments.get("acks") is ACKS_UNSET:
            arguments = {**arguments, "acks": cls.__dataclass_fields__["acks"].default}
        return super().build(arguments, unknown)

    def __post_init__(self) -> None:
        # derived connection settings: each producer's own name (aiokafka names them apart
        # too), and the producer's keyword sets how deep each connection pipelines
        if not self.client_id:
            object.__setattr__(self, "client_id", f"aiokafka-lead-producer-{next(_ids)}")
        object.__setattr__(self, "max_in_flight", self.max_in_flight_requests_per_connection)
        super().__post_init__()

    def _check(self) -> None:
        super()._check()
        acks_all = self.acks_code == -1
        if self.enable_idempotence and not acks_all:
            raise KafkaConfigurationError("enable_idempotence=True needs acks='all'")
        if self.transactional_id is not None:
            if self.enable_idempotence is False:
                raise KafkaConfigurationError(
                    "a transactional producer needs enable_idempotence (leave it unset or True)"
                )
            if not acks_all:
                raise KafkaConfigurationError("a transactional producer needs acks='all'")
        if self.enable_idempotence and self.max_in_flight_requests_per_connection > IDEMPOTENT_MAX_IN_FLIGHT:
            raise KafkaConfigurationError(
                "enable_idempotence=True allows at most 5 in-flight requests per connection"
            )
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise KafkaConfigurationError(
                "delivery_timeout_ms must be at least linger_ms + request_timeout_ms (as in Java)"
            )
        require_codec(self.compression)

    @functools.cached_property
    def acks_code(self) -> int:
        """``acks`` as sent: -1 (all), 0 or 1."""
        return ACKS[self.acks]

    @functools.cached_property
    def compression(self) -> CompressionType:
        return COMPRESSION[self.compression_type]

    @property
    def idempotent(self) -> bool:
        """Idempotence as it runs: always for a transactional producer; unset, on when acks
        is 'all' and at most 5 requests are in flight (Java's rule)."""
        if self.transactional_id is not None:
            return True
        if self.enable_idempotence is None:
            return (
                self.acks_code == -1
                and self.max_in_flight_requests_per_connection <= IDEMPOTENT_MAX_IN_FLIGHT
            )
        return self.enable_idempotence

    # ------------------------------------------- derived once, read per record or batch
    @functools.cached_property
    def async_serializers(self) -> bool:
        """A serializer is a coroutine function: awaited before ``send()`` takes the bytes."""
        return is_async_callable(self.key_serializer) or is_async_callable(self.value_serializer)

    @functools.cached_property
    def send_takes_bytes(self) -> bool:
        """``send()`` calls no serializer (none set, or async ones awaited before it): its hot path."""
        return self.async_serializers or (self.key_serializer is None and self.value_serializer is None)

    @functools.cached_property
    def partition_in_flight(self) -> int:
        """Batches of one partition in flight at once (DESIGN.md invariant 24): more than one
        only for the idempotent producer, whose sequences keep them in order across retries."""
        return self.max_in_flight_requests_per_connection if self.idempotent else 1

    @functools.cached_property
    def linger_s(self) -> float:
        return self.linger_ms / 1000

    @functools.cached_property
    def max_block_s(self) -> float:
        return self.max_block_ms / 1000

    @functools.cached_property
    def delivery_timeout_s(self) -> float:
        return self.delivery_timeout_ms / 1000


__all__ = ["ACKS_UNSET", "COMPRESSION", "ProducerConfig"]
