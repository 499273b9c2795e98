"""The fake cluster's transactions answer like a real Kafka broker's, field by field.

The same raw requests go to a one-node KRaft cluster and to a one-node FakeCluster: a
transactional producer id, a transaction left open (the last stable offset holds), aborted
(markers, the aborted-transaction index in a read_committed Fetch), then one committed,
then the producer fenced by a new InitProducerId. Responses are compared after masking
what differs between any two clusters (see test_fake_vs_real.py); record batches are
compared by their header fields (a marker's timestamp differs).
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.admin.types import NewTopic
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.messages import (
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from aiokafka_lead.records import MemoryRecords, RecordBatch, RecordBatchBuilder
from aiokafka_lead.testing.fake import FakeCluster
from tests.integration.test_fake_vs_real import RETRY_LATER, TIMESTAMP, fetch, normalize, run_against

pytestmark = pytest.mark.integration

TXN = "fake-vs-real-txn"


def txn_batch(producer_id: int, epoch: int, sequence: int, *values: bytes) -> bytes:
    builder = RecordBatchBuilder(is_transactional=True)
    for i, value in enumerate(values):
        builder.append(TIMESTAMP + i, None, value)
    return builder.build(producer_id, epoch, sequence)


def produce(topic: str, records: bytes) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=TXN,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)]
            )
        ],
    )


def list_latest(topic: str, isolation_level: int) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)],
            )
        ],
    )


def batches(response: Any) -> list[tuple[Any, ...]]:
    """A fetched partition's batches by header (the records field is replaced by this)."""
    part = response.responses[0].partitions[0]
    data = bytes(part.records or b"")
    part.records = None
    return [
        (b.base_offset, b.last_offset_delta, b.attributes, b.producer_epoch, b.base_sequence, b.record_count)
        for b in MemoryRecords(data)
        if isinstance(b, RecordBatch)
    ]


#: what a real broker may answer while the previous step's transaction work completes:
#: NOT_COORDINATOR while a fresh cluster's __transaction_state partition gets its leader;
#: NOT_ENOUGH_REPLICAS (how a broker reports a KIP-890 verification that must be retried)
BUSY = (*RETRY_LATER, E.NOT_COORDINATOR, E.CONCURRENT_TRANSACTIONS, E.NOT_ENOUGH_REPLICAS)


def produced(response: Any) -> bool:
    return response.responses[0].partition_responses[0].error_code not in BUSY


def settled(response: Any) -> bool:
    return response.error_code not in BUSY


async def until(conn: Connection, request: Any, ok: Any, *, version: int) -> Any:
    """Send until ``ok(response)`` (a fresh cluster's coordinator warms up; markers land late)."""
    with anyio.fail_after(60):
        while True:
            response = await conn.send(request, version=version)
            if ok(response):
                return response
            await anyio.sleep(0.1)


async def scenario(conn: Connection, topic: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    metadata = await conn.send(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), version=12
    )
    topic_id, leader_epoch = metadata.topics[0].topic_id, metadata.topics[0].partitions[0].leader_epoch

    def read_committed(offset: int) -> Any:
        request = fetch(topic_id, offset, leader_epoch)
        request.isolation_level = 1
        return request

    async def lso_reaches(offset: int) -> Any:
        return await until(
            conn, list_latest(topic, 1), lambda r: r.topics[0].partitions[0].offset >= offset, version=10
        )

    async def read_all(start: int, end: int) -> tuple[Any, list[tuple[Any, ...]]]:
        """Fetch from ``start`` until ``end``: the first response and every batch in order.

        A real broker may answer a read_committed fetch with fewer batches than it could
        (here: only the aborted data, not its marker); the consumer simply fetches again.
        """
        first = None
        found: list[tuple[Any, ...]] = []
        offset = start
        last = "none"
        try:
            with anyio.fail_after(30):
                while offset < end:
                    response = await conn.send(read_committed(offset), version=17)
                    part = response.responses[0].partitions[0]
                    last = (
                        f"error {part.error_code}, high watermark {part.high_watermark}, "
                        f"last stable offset {part.last_stable_offset}, "
                        f"{len(part.records or b'')} bytes of records"
                    )
                    got = batches(response)
                    first = first or response
                    found += got
                    offset = got[-1][0] + got[-1][1] + 1 if got else offset
        except TimeoutError:
            raise AssertionError(
                f"read_committed fetches from {start} stayed at offset {offset} of {end} for 30 s "
                f"(batches so far {found}; last answer: {last})"
            ) from None
        return first, found

    out["find_coordinator"] = await until(
        conn,
        FindCoordinatorRequest(key_type=1, coordinator_keys=[TXN]),
        lambda r: r.coordinators[0].error_code not in BUSY,
        version=6,
    )
    init = InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60_000)
    out["init"] = first = await until(conn, init, settled, version=5)
    assert first.error_code == E.NONE, first
    pid, epoch = first.producer_id, first.producer_epoch

    # an open transaction holds the last stable offset back
    out["produce_open"] = await until(
        conn, produce(topic, txn_batch(pid, epoch, 0, b"a0", b"a1")), produced, version=12
    )
    out["list_committed_open"] = await conn.send(list_latest(topic, 1), version=10)
    out["list_uncommitted_open"] = await conn.send(list_latest(topic, 0), version=10)
    out["fetch_open"] = response = await conn.send(read_committed(0), version=17)
    out["fetch_open_batches"] = batches(response)

    # abort it: the ABORT marker at offset 2, the index lists the transaction
    out["end_abort"] = end = await until(
        conn,
        EndTxnRequest(transactional_id=TXN, producer_id=pid, producer_epoch=epoch, committed=False),
        settled,
        version=5,
    )
    epoch = end.producer_epoch
    out["lso_after_abort"] = await lso_reaches(3)
    out["fetch_aborted"], out["fetch_aborted_batches"] = await read_all(0, 3)

    # a committed one at the bumped epoch
    out["produce_commit"] = await until(
        conn, produce(topic, txn_batch(pid, epoch, 0, b"c0")), produced, version=12
    )
    out["end_commit"] = end = await until(
        conn,
        EndTxnRequest(transactional_id=TXN, producer_id=pid, producer_epoch=epoch, committed=True),
        settled,
        version=5,
    )
    stale = epoch
    out["lso_after_commit"] = await lso_reaches(5)
    out["fetch_all"], out["fetch_all_batches"] = await read_all(0, 5)
    out["fetch_from_3"], out["fetch_from_3_batches"] = await read_all(3, 5)

    # a new instance fences the old epochs
    out["init_again"] = await until(conn, init, settled, version=5)
    out["produce_fenced"] = await conn.send(produce(topic, txn_batch(pid, stale, 1, b"z")), version=12)
    out["end_fenced"] = await conn.send(
        EndTxnRequest(transactional_id=TXN, producer_id=pid, producer_epoch=stale, committed=True), version=5
    )
    return out


async def test_fake_transactions_answer_like_a_real_broker(kafka_cluster_1: Any) -> None:
    topic = f"fake-vs-real-txn-{uuid.uuid4().hex[:8]}"
    bootstrap = kafka_cluster_1.bootstrap()
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        # retention.ms=-1: the scenario writes fixed 2023 timestamps, which the broker's
        # retention check (every 5 minutes) could delete mid-scenario; a fetch from offset 0
        # then answers OFFSET_OUT_OF_RANGE for good
        await admin.create_topics(
            [NewTopic(topic, num_partitions=1, replication_factor=1, topic_configs={"retention.ms": "-1"})]
        )
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    real = await run_against(host, int(port), topic, scenario)
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic(topic, partitions=1, replication_factor=1)
        fake = await run_against(*fc.address(1), topic, scenario)
    assert [b[:2] for b in real["fetch_all_batches"]] == [
        (0, 1),
        (2, 0),
        (3, 0),
        (4, 0),
    ]  # data, ABORT, data, COMMIT
    fenced = real["produce_fenced"].responses[0].partition_responses[0].error_code
    print(f"\nfenced produce: error {fenced}; fenced EndTxn: error {real['end_fenced'].error_code}")
    for step in real:
        f, r = normalize(fake[step]), normalize(real[step])
        assert f == r, f"{step}:\n fake={f}\n real={r}"
