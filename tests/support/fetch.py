"""Read a whole topic back with the consumer in assign mode (no group), up to the end offsets."""

from __future__ import annotations

import anyio

from aiokafka_lead import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka_lead.admin import AdminClient


async def read_topic(bootstrap: str, topic: str) -> dict[int, list[ConsumerRecord[bytes, bytes]]]:
    """Every record of every partition, in offset order (control records skipped)."""
    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    out: dict[int, list[ConsumerRecord[bytes, bytes]]] = {}
    async with consumer:
        with anyio.fail_after(120):
            async with AdminClient(bootstrap_servers=bootstrap) as admin:
                [described] = await admin.describe_topics([topic])
            tps = [TopicPartition(topic, p.partition) for p in described.partitions]
            ends = await consumer.end_offsets(tps)
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            pending = {tp for tp in tps if ends[tp] > 0}
            for tp in tps:
                out[tp.partition] = []
            while pending:
                for tp, records in (await consumer.getmany(*pending, timeout_ms=1000)).items():
                    out[tp.partition].extend(records)
                for tp in list(pending):
                    if await consumer.position(tp) >= ends[tp]:
                        pending.discard(tp)
    return out

