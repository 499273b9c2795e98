"""The fake's transaction coordinator over raw requests: the batched (broker) form of
AddPartitionsToTxn, fencing by InitProducerId, NOT_COORDINATOR from other nodes."""

from __future__ import annotations

import anyio

from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.protocol.messages import AddPartitionsToTxnRequest, InitProducerIdRequest
from aiokafka_lead.records import MemoryRecords, RecordBatch
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.fake.util import DEADLINE, connect

TXN = "tx"


async def test_add_partitions_batched_form_and_fencing() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=2) as fc:
            fc.create_topic("t", partitions=2)
            fc.set_coordinator(TXN, 1, key_type=1)
            async with connect(fc, 1) as conn, connect(fc, 2) as other:
                init = InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60_000)
                assert (await other.send(init, version=5)).error_code == E.NOT_COORDINATOR
                first = await conn.send(init, version=5)

                def add(epoch: int) -> AddPartitionsToTxnRequest:
                    txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
                        transactional_id=TXN,
                        producer_id=first.producer_id,
                        producer_epoch=epoch,
                        topics=[
                            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])
                        ],
                    )
                    return AddPartitionsToTxnRequest(transactions=[txn])

                response = await conn.send(add(first.producer_epoch), version=5)
                (result,) = response.results_by_transaction
                codes = [p.partition_error_code for t in result.topic_results for p in t.results_by_partition]
                assert (result.transactional_id, codes) == (TXN, [0, 0])
                assert fc.txns.transactions[TXN].partitions == {("t", 0), ("t", 1)}
                second = await conn.send(init, version=5)  # a new instance: the open txn is aborted
                assert second.producer_epoch == first.producer_epoch + 1
                (marker,) = MemoryRecords(fc.partition(("t", 0)).batches[0].data)
                assert isinstance(marker, RecordBatch) and marker.is_control  # its ABORT marker
                response = await conn.send(add(first.producer_epoch), version=5)
                codes = [
                    p.partition_error_code
                    for t in response.results_by_transaction[0].topic_results
                    for p in t.results_by_partition
                ]
                assert codes == [90, 90]  # PRODUCER_FENCED
