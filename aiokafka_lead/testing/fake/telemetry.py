"""The fake brokers' client telemetry receiver (KIP-714): one subscription for every client,
and every push received. A cluster without one advertises neither API, as a Kafka broker
without a receiver plugin."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from aiokafka_lead.records.compression import CompressionType, decompress


@dataclass(slots=True)
class Push:
    client_instance_id: uuid.UUID
    subscription_id: int
    terminating: bool
    compression_type: int
    #: the OTLP MetricsData bytes, decompressed
    metrics: bytes


@dataclass(slots=True)
class FakeTelemetry:
    """Change the fields, then ``changed()``: clients learn the new subscription at their next push."""

    prefixes: list[str] = field(default_factory=lambda: [""])
    interval_ms: int = 100
    delta: bool = False
    max_bytes: int = 1024 * 1024
    codecs: list[int] = field(
        default_factory=lambda: [CompressionType.ZSTD, CompressionType.LZ4, CompressionType.GZIP]
    )
    subscription_id: int = 1
    pushes: list[Push] = field(default_factory=list)
    #: pushes refused, by error name
    refused: list[str] = field(default_factory=list)
    instances: list[uuid.UUID] = field(default_factory=list)

    def changed(self) -> None:
        self.subscription_id += 1

    def new_instance(self) -> uuid.UUID:
        instance = uuid.uuid4()
        self.instances.append(instance)
        return instance

    def receive(self, push: Push, compressed: bytes) -> str | None:
        """The error name a broker answers, or None (the push is kept)."""
        if push.subscription_id != self.subscription_id:
            error = "UNKNOWN_SUBSCRIPTION_ID"
        elif push.compression_type and push.compression_type not in self.codecs:
            error = "UNSUPPORTED_COMPRESSION_TYPE"
        elif len(compressed) > self.max_bytes:
            error = "TELEMETRY_TOO_LARGE"
        else:
            codec = push.compression_type
            push.metrics = decompress(codec, compressed) if codec else compressed
            self.pushes.append(push)
            return None
        self.refused.append(error)
        return error
