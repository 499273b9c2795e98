"""The transactional producer on the fake cluster: both protocol versions, read_committed,
coordinator moves, zombie fencing, abortable errors and calls in the wrong state."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import (
    IllegalGenerationError,
    IllegalOperation,
    IllegalStateError,
    KafkaTimeoutError,
    ProducerFencedError,
    TopicAuthorizationFailedError,
    TransactionAbortableError,
    UnknownProducerIdError,
)
from aiokafka_lead.producer.transaction import TransactionAbortedError
from aiokafka_lead.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Error
from tests.support.txn import read_committed

PRODUCE, INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 0, 22, 24, 25, 26, 28
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
DEADLINE = 20


@asynccontextmanager
async def cluster(version: int = 2, brokers: int = 3) -> AsyncIterator[FakeCluster]:
    async with FakeCluster(brokers=brokers) as fc:
        fc.txns.transaction_version = version
        fc.create_topic("t", partitions=2)
        yield fc


def txn_producer(fc: FakeCluster, txn_id: str = "tx", **kwargs: Any) -> AIOKafkaProducer:
    kwargs.setdefault("max_block_ms", 5000)
    kwargs.setdefault("retry_backoff_ms", 10)
    return AIOKafkaProducer(bootstrap_servers=fc.bootstrap, transactional_id=txn_id, **kwargs)


async def committed_values(fc: FakeCluster) -> dict[int, list[bytes | None]]:
    got = await read_committed(fc.bootstrap, [TP0, TP1])
    return {tp.partition: [r.value for r in records] for tp, records in got.items()}


@pytest.mark.parametrize("version", [1, 2])
async def test_commit_and_abort_seen_by_read_committed(version: int) -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(version) as fc, txn_producer(fc) as producer:
            assert producer.metrics()["transaction_version"] == version
            epoch0 = producer.metrics()["producer_epoch"]
            async with producer.transaction():
                for i in range(5):
                    await producer.send("t", b"c%d" % i, partition=i % 2)
            await producer.begin_transaction()
            await producer.send("t", b"aborted", partition=0)
            await producer.send("t", b"aborted", partition=1)
            await producer.flush()
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send("t", b"after", partition=1)
            assert await committed_values(fc) == {0: [b"c0", b"c2", b"c4"], 1: [b"c1", b"c3", b"after"]}
            # every record is in the log, plus one marker per partition per transaction
            assert len(fc.records(("t", 0))) == 3 + 1 + 2
            m = producer.metrics()
            assert (m["transactions_committed"], m["transactions_aborted"]) == (2, 1)
            add_partitions = fc.count(ADD_PARTITIONS)
            produce_versions = {r.api_version for r in fc.requests.select(PRODUCE)}
            if version == 2:
                assert add_partitions == 0  # Produce v12 adds partitions implicitly
                assert produce_versions == {12}
                assert m["producer_epoch"] == epoch0 + 3  # KIP-890: one bump per EndTxn
            else:
                assert add_partitions == 3  # one request per transaction for both partitions
                assert max(produce_versions) == 11
                assert m["producer_epoch"] == epoch0


@pytest.mark.parametrize("version", [1, 2])
async def test_read_committed_waits_for_the_last_stable_offset(version: int) -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(version) as fc, txn_producer(fc) as producer:
            async with producer.transaction():
                await producer.send("t", b"first", partition=0)
            await producer.begin_transaction()
            await producer.send_and_wait("t", b"open", partition=0)
            async with AIOKafkaConsumer(
                bootstrap_servers=fc.bootstrap, isolation_level="read_committed", auto_offset_reset="earliest"
            ) as consumer:
                consumer.assign([TP0])
                assert (await consumer.end_offsets([TP0]))[TP0] == 2  # the LSO: below the open txn
                first = (await consumer.getmany(TP0, timeout_ms=300)).get(TP0, [])
                assert [r.value for r in first] == [b"first"]
                assert await consumer.position(TP0) == 2  # past the commit marker
                assert (await consumer.getmany(TP0, timeout_ms=200)) == {}  # the open txn is withheld
                await producer.commit_transaction()
                got = await consumer.getone(TP0)
                assert (got.value, got.offset) == (b"open", 2)
                assert (await consumer.end_offsets([TP0]))[TP0] == 4


async def test_send_offsets_with_group_metadata_commits_only_with_the_transaction() -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(2) as fc, txn_producer(fc) as producer:
            group = fc.groups.group("g")
            async with producer.transaction():
                await producer.send("t", b"x", partition=0)
                await producer.send_offsets_to_transaction({TP0: 7, TP1: OffsetAndMetadata(3, "m")}, "g")
                assert ("t", 0) not in group.offsets  # not visible before the commit
            assert (group.offsets[("t", 0)].offset, group.offsets[("t", 1)].offset) == (7, 3)
            await producer.begin_transaction()
            await producer.send_offsets_to_transaction({TP0: 99}, "g")
            await producer.abort_transaction()
            assert group.offsets[("t", 0)].offset == 7  # aborted offsets never apply


async def test_version_1_offsets_use_add_offsets_to_txn() -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(1) as fc, txn_producer(fc) as producer:
            async with producer.transaction():
                await producer.send_offsets_to_transaction({TP0: 5}, ConsumerGroupMetadata("g"))
            assert fc.count(ADD_OFFSETS) == 1
            assert {r.api_version for r in fc.requests.select(TXN_OFFSET_COMMIT)} == {4}
            assert {r.api_version for r in fc.requests.select(END_TXN)} == {4}
            assert fc.groups.group("g").offsets[("t", 0)].offset == 5


async def test_calls_in_the_wrong_state_raise_at_once() -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(2) as fc, txn_producer(fc) as producer:
            with pytest.raises(IllegalOperation, match="begin_transaction"):
                await producer.send("t", b"x")
            with pytest.raises(IllegalStateError, match=r"commit_transaction.*ready"):
                await producer.commit_transaction()
            with pytest.raises(IllegalStateError, match=r"abort_transaction.*ready"):
                await producer.abort_transaction()
            with pytest.raises(IllegalOperation, match="send_offsets"):
                await producer.send_offsets_to_transaction({TP0: 1}, "g")
            await producer.begin_transaction()
            with pytest.raises(IllegalStateError, match=r"begin_transaction.*in_transaction"):
                await producer.begin_transaction()
            await producer.commit_transaction()  # an empty transaction sends nothing
            assert fc.count(END_TXN) == 0
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as plain:
                for call in (plain.commit_transaction, plain.abort_transaction):
                    with pytest.raises(IllegalOperation, match="transactional_id"):
                        await call()
                with pytest.raises(IllegalOperation, match="transactional_id"):
                    await plain.send_offsets_to_transaction({TP0: 1}, "g")
                with pytest.raises(IllegalOperation, match="transactional_id"):
                    await plain.begin_transaction()
    with pytest.raises(ValueError, match="enable_idempotence"):
        AIOKafkaProducer(transactional_id="x", enable_idempotence=False)


@pytest.mark.parametrize("version", [1, 2])
async def test_coordinator_moves_are_retried_invisibly(version: int) -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(version) as fc:
            fc.set_coordinator("tx", 1, key_type=1)
            fc.intercept(INIT_PRODUCER_ID, lambda *_: Error(E.COORDINATOR_LOAD_IN_PROGRESS), times=2)
            async with txn_producer(fc) as producer:
                await producer.begin_transaction()
                await producer.send_and_wait("t", b"a", partition=0)
                fc.set_coordinator("tx", 2, key_type=1)  # moved: node 1 answers NOT_COORDINATOR
                fc.intercept(END_TXN, lambda *_: Error(E.CONCURRENT_TRANSACTIONS), times=2)
                await producer.commit_transaction()
                assert producer.metrics()["transaction_coordinator"] == 2
                # the new coordinator's broker dies: looked up again, found on node 3
                await producer.begin_transaction()
                await producer.send_and_wait("t", b"b", partition=1)
                fc.set_coordinator("tx", 3, key_type=1)
                await fc.stop_node(2)
                await producer.commit_transaction()
                m = producer.metrics()
                assert m["transaction_coordinator"] == 3
                assert m["transaction_coordinator_lookups"] >= 3
                assert m["transaction_retries"]["NotCoordinatorError"] >= 1
                assert m["transaction_retries"]["ConcurrentTransactionsError"] == 2
                assert m["transactions_committed"] == 2
            await fc.start_node(2)
            assert await committed_values(fc) == {0: [b"a"], 1: [b"b"]}


@pytest.mark.parametrize("version", [1, 2])
async def test_zombie_is_fenced_and_its_transaction_never_visible(version: int) -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(version) as fc:
            async with txn_producer(fc) as zombie:
                await zombie.begin_transaction()
                await zombie.send_and_wait("t", b"zombie", partition=0)
                async with txn_producer(fc) as fresh:  # same transactional id
                    assert fresh.metrics()["producer_epoch"] > zombie.metrics()["producer_epoch"]
                    async with fresh.transaction():
                        await fresh.send("t", b"fresh", partition=0)
                    await zombie.send("t", b"late", partition=1)
                    with pytest.raises((ProducerFencedError, IllegalStateError)):
                        await zombie.commit_transaction()
                    with pytest.raises(ProducerFencedError):
                        await zombie.abort_transaction()
                    assert zombie.metrics()["transaction_state"] == "fatal_error"
                    with pytest.raises(ProducerFencedError, match="failed fatally"):
                        await zombie.begin_transaction()
                    with pytest.raises(ProducerFencedError, match="failed fatally"):
                        await zombie.send("t", b"never")
            assert await committed_values(fc) == {0: [b"fresh"], 1: []}


async def test_rejected_offset_commit_is_abortable_then_the_producer_works_again() -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(2) as fc, txn_producer(fc) as producer:
            await producer.begin_transaction()
            await producer.send("t", b"lost", partition=0)
            fc.intercept(TXN_OFFSET_COMMIT, lambda *_: Error(E.ILLEGAL_GENERATION), times=1)
            with pytest.raises(IllegalGenerationError):
                await producer.send_offsets_to_transaction({TP0: 1}, ConsumerGroupMetadata("g", 3, "m-1"))
            assert producer.metrics()["transaction_state"] == "abortable_error"
            with pytest.raises(IllegalStateError, match="only abort_transaction"):
                await producer.commit_transaction()
            with pytest.raises(IllegalOperation, match="only abort_transaction"):
                await producer.send("t", b"more", partition=0)
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send("t", b"kept", partition=0)
            assert await committed_values(fc) == {0: [b"kept"], 1: []}


@pytest.mark.parametrize("version", [1, 2])
async def test_failed_batch_makes_the_transaction_abortable(version: int) -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(version) as fc, txn_producer(fc) as producer:
            await producer.begin_transaction()
            fc.intercept(PRODUCE, lambda *_: Error(E.TRANSACTION_ABORTABLE), times=1)
            handle = await producer.send("t", b"bad", partition=0)
            with pytest.raises(TransactionAbortableError):
                await handle
            with pytest.raises(IllegalStateError, match="TransactionAbortable"):
                await producer.commit_transaction()
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send("t", b"good", partition=0)
            assert await committed_values(fc) == {0: [b"good"], 1: []}


async def test_abort_fails_unsent_records_and_context_aborts_on_error() -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(1) as fc, txn_producer(fc, linger_ms=10_000) as producer:
            await producer.begin_transaction()
            handle = await producer.send("t", b"unsent", partition=0)  # lingering
            await producer.abort_transaction()
            with pytest.raises(TransactionAbortedError):
                await handle
            with pytest.raises(RuntimeError, match="boom"):
                async with producer.transaction():
                    await producer.send("t", b"x", partition=1)
                    raise RuntimeError("boom")
            assert producer.metrics()["transactions_aborted"] == 2
            assert producer.metrics()["transaction_state"] == "ready"
            assert await committed_values(fc) == {0: [], 1: []}


async def test_add_partitions_failure_is_abortable_and_fails_held_records() -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(1) as fc, txn_producer(fc) as producer:
            await producer.begin_transaction()
            fc.intercept(ADD_PARTITIONS, lambda *_: Error(E.TOPIC_AUTHORIZATION_FAILED), times=1)
            handle = await producer.send("t", b"held", partition=0)
            with pytest.raises(TopicAuthorizationFailedError):
                await handle
            assert fc.count(PRODUCE) == 0  # never sent outside the transaction
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send("t", b"ok", partition=0)
            assert await committed_values(fc) == {0: [b"ok"], 1: []}


async def test_group_metadata_fences_offsets_of_a_stale_member() -> None:
    """KIP-447: offsets sent with the consumer's group metadata carry its generation and
    member id; after a rebalance the old generation is rejected (abortable)."""
    with anyio.fail_after(DEADLINE):
        async with cluster(2) as fc, txn_producer(fc) as producer, AIOKafkaConsumer(
            "t", bootstrap_servers=fc.bootstrap, group_id="g", enable_auto_commit=False
        ) as consumer:
            with pytest.raises(IllegalStateError, match="group_id"):
                AIOKafkaConsumer(bootstrap_servers=fc.bootstrap).group_metadata()
            while not consumer.assignment():
                await consumer.getmany(timeout_ms=100)
            meta = consumer.group_metadata()
            assert (meta.group_id, meta.generation_id >= 1, bool(meta.member_id)) == ("g", True, True)
            async with producer.transaction():
                await producer.send("t", b"x", partition=0)
                await producer.send_offsets_to_transaction({TP0: 1}, meta)
            sent = fc.requests.select(TXN_OFFSET_COMMIT)[-1].request
            assert sent.generation_id_or_member_epoch == meta.generation_id
            assert sent.member_id == meta.member_id
            assert fc.groups.group("g").offsets[("t", 0)].offset == 1
            stale = meta._replace(generation_id=meta.generation_id - 1)
            await producer.begin_transaction()
            with pytest.raises(IllegalGenerationError):
                await producer.send_offsets_to_transaction({TP0: 2}, stale)
            await producer.abort_transaction()
            assert fc.groups.group("g").offsets[("t", 0)].offset == 1


@pytest.mark.parametrize("version", [1, 2])
async def test_abort_after_an_abortable_error_bumps_the_epoch(version: int) -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(version) as fc, txn_producer(fc) as producer:
            await producer.begin_transaction()
            await producer.send_and_wait("t", b"sent", partition=0)
            fc.intercept(PRODUCE, lambda *_: Error(E.UNKNOWN_PRODUCER_ID), times=1)  # sequences unknown
            with pytest.raises(UnknownProducerIdError):
                await (await producer.send("t", b"lost", partition=1))
            epoch, inits = producer.metrics()["producer_epoch"], fc.count(INIT_PRODUCER_ID)
            await producer.abort_transaction()
            assert fc.count(INIT_PRODUCER_ID) == inits + 1  # KIP-360: the abort bumps the epoch
            assert producer.metrics()["producer_epoch"] == epoch + (2 if version == 2 else 1)
            async with producer.transaction():
                await producer.send("t", b"again", partition=1)
            assert await committed_values(fc) == {0: [], 1: [b"again"]}


async def test_commit_that_timed_out_may_be_retried() -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(2) as fc, txn_producer(fc, max_block_ms=600) as producer:
            await producer.begin_transaction()
            await producer.send("t", b"x", partition=0)
            fc.intercept(END_TXN, lambda *_: Error(E.COORDINATOR_NOT_AVAILABLE), times=None)  # always
            with pytest.raises(KafkaTimeoutError, match="EndTxn"):
                await producer.commit_transaction()
            assert producer.metrics()["transaction_state"] == "committing_transaction"
            with pytest.raises(IllegalOperation, match="committing"):
                await producer.send("t", b"y", partition=0)
            fc.clear_intercepts()
            await producer.commit_transaction()  # the same commit, again
            assert await committed_values(fc) == {0: [b"x"], 1: []}


async def test_transaction_abortable_from_end_txn_needs_an_abort() -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(2) as fc, txn_producer(fc) as producer:
            await producer.begin_transaction()
            await producer.send("t", b"x", partition=0)
            fc.intercept(END_TXN, lambda *_: Error(E.TRANSACTION_ABORTABLE), times=1)
            with pytest.raises(TransactionAbortableError):
                await producer.commit_transaction()
            assert producer.metrics()["transaction_state"] == "abortable_error"
            await producer.abort_transaction()
            assert await committed_values(fc) == {0: [], 1: []}


async def test_a_feature_downgrade_takes_effect_at_the_next_transaction() -> None:
    with anyio.fail_after(DEADLINE):
        async with cluster(2) as fc:
            fc.set_coordinator("tx", 1, key_type=1)
            async with txn_producer(fc) as producer:
                async with producer.transaction():
                    await producer.send("t", b"v2", partition=0)
                fc.txns.transaction_version = 1  # e.g. kafka-features downgrade
                await fc.restart_node(1)  # the coordinator connection is made again
                async with producer.transaction():  # still version 2 when it began
                    await producer.send_offsets_to_transaction({TP0: 1}, "g")
                assert producer.metrics()["transaction_version"] == 2
                adds = fc.count(ADD_PARTITIONS)
                async with producer.transaction():  # began on the new connection: version 1
                    await producer.send("t", b"v1", partition=1)
                assert producer.metrics()["transaction_version"] == 1
                assert fc.count(ADD_PARTITIONS) == adds + 1
            assert await committed_values(fc) == {0: [b"v2"], 1: [b"v1"]}


@pytest.mark.parametrize("version", [1, 2])
async def test_a_batch_split_for_size_stays_in_the_transaction(version: int) -> None:
    """MESSAGE_TOO_LARGE splits a transactional batch: every part is still transactional."""
    values = [b"%04d" % i + bytes(500) for i in range(20)]
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.txns.transaction_version = version
            fc.create_topic("t", partitions=2, replication_factor=1, max_message_bytes=3000)
            async with txn_producer(fc, linger_ms=1000, max_batch_size=65536) as producer:
                async with producer.transaction():
                    for value in values:
                        await producer.send("t", value, partition=0)
                assert producer.metrics()["batches_split"] >= 2
                await producer.begin_transaction()
                await producer.send("t", b"x" + bytes(5000), partition=0)  # alone over the limit
                with pytest.raises(IllegalStateError, match=r"MessageTooLarge|MessageSizeTooLarge"):
                    await producer.commit_transaction()
                await producer.abort_transaction()
            assert await committed_values(fc) == {0: values, 1: []}


async def test_bad_send_offsets_arguments_leave_the_transaction_intact() -> None:
    """Checked at the call (aiokafka's checks); before, the request went out and its failure
    left the transaction abort-only."""
    with anyio.fail_after(DEADLINE):
        async with cluster() as fc, txn_producer(fc) as producer:
            await producer.begin_transaction()
            await producer.send_and_wait("t", b"v", partition=0)
            with pytest.raises(ValueError):
                await producer.send_offsets_to_transaction({TP0: 1}, "")
            with pytest.raises(TypeError, match="TopicPartition"):
                await producer.send_offsets_to_transaction({("t", 0): 1}, "g")  # type: ignore[dict-item]
            with pytest.raises(ValueError):
                await producer.send_offsets_to_transaction({}, "g")
            await producer.commit_transaction()
            assert (await committed_values(fc))[0] == [b"v"]
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as plain:
                context = plain.transaction()  # as in aiokafka, the check comes on entering
                with pytest.raises(IllegalOperation, match="transactional_id"):
                    async with context:
                        pass
