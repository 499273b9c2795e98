"""aiokafka's partitioner module: ``DefaultPartitioner`` and ``murmur2``.

``DefaultPartitioner`` is the producer's own (murmur2 for keys, as the Java client; a
random available partition for ``partitioner(None, ...)``, and KIP-480 sticky choice
inside the producer). ``murmur2`` here returns aiokafka's unsigned 32-bit value; the
producer's signed one (Java's) is :func:`aiokafka_lead.producer.partitioner.murmur2`.
"""

from __future__ import annotations

from aiokafka_lead.producer.partitioner import DefaultPartitioner
from aiokafka_lead.producer.partitioner import murmur2 as _murmur2_signed


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's murmur2 hash of ``data`` as an unsigned 32-bit int (aiokafka's result)."""
    return _murmur2_signed(bytes(data)) & 0xFFFFFFFF


__all__ = ["DefaultPartitioner", "murmur2"]
