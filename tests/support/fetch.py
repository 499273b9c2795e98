"""Read a topic back with plain Fetch requests (test support until tests use the consumer).

Fetch v12 names topics (v13+ uses ids); everything up to each partition's high watermark
is read from its leader.
"""

from __future__ import annotations

import anyio

from aiokafka_lead.client import ClientCore, connection_config
from aiokafka_lead.protocol.messages import FetchRequest
from aiokafka_lead.records import MemoryRecords, Record
from aiokafka_lead.structs import TopicPartition

FETCH_BY_NAME_MAX = 12


async def read_topic(bootstrap: str, topic: str) -> dict[int, list[Record]]:
    """Every record of every partition, in offset order (control batches skipped)."""
    core = ClientCore(
        "test-reader",
        bootstrap_servers=bootstrap,
        config=connection_config(client_id="test-reader", request_timeout_ms=30_000),
        topics=lambda: [topic],
    )
    out: dict[int, list[Record]] = {}
    await core.start()
    try:
        with anyio.fail_after(120):
            await core.wait_for_topics([topic], 30_000)
            for partition in sorted(core.store.partitions_for_topic(topic) or ()):
                out[partition] = await _read_partition(core, TopicPartition(topic, partition))
    finally:
        await core.close()
    return out


async def _read_partition(core: ClientCore, tp: TopicPartition) -> list[Record]:
    records: list[Record] = []
    offset = 0
    while True:
        leader = core.store.leader_for(tp)
        assert leader is not None, f"no leader for {tp}"
        conn = await core.pool.connection(leader.node_id)
        version = min(conn.version_for(FetchRequest.API_KEY), FETCH_BY_NAME_MAX)
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=100,
            min_bytes=1,
            max_bytes=8 << 20,
            topics=[
                FetchRequest.FetchTopic(
                    topic=tp.topic,
                    partitions=[
                        FetchRequest.FetchPartition(
                            partition=tp.partition, fetch_offset=offset, partition_max_bytes=4 << 20
                        )
                    ],
                )
            ],
        )
        response = await conn.send(request, version=version)
        part = response.responses[0].partitions[0]
        assert part.error_code == 0, f"fetch {tp} at {offset}: error {part.error_code}"
        for batch in MemoryRecords(part.records or b"", topic=tp.topic, partition=tp.partition):
            batch.validate_crc()
            if not batch.is_control:
                records.extend(r for r in batch.records() if r.offset >= offset)
            offset = max(offset, batch.last_offset + 1)
        if offset >= part.high_watermark:
            return records
