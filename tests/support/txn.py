"""Reading a topic as a read_committed consumer sees it, up to the end offsets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiokafka_lead import AIOKafkaConsumer
from aiokafka_lead.structs import TopicPartition


async def read_committed(
    bootstrap: str, partitions: Sequence[TopicPartition], **kwargs: Any
) -> dict[TopicPartition, list[Any]]:
    """Every record a read_committed consumer delivers per partition, up to the LSO."""
    out: dict[TopicPartition, list[Any]] = {tp: [] for tp in partitions}
    async with AIOKafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", auto_offset_reset="earliest", **kwargs
    ) as consumer:
        consumer.assign(list(partitions))
        ends = await consumer.end_offsets(list(partitions))

        async def behind() -> bool:
            return any([await consumer.position(tp) < ends[tp] for tp in partitions])

        while await behind():
            for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                out[tp].extend(records)
    return out
