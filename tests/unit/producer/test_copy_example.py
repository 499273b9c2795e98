"""examples/transactional_copy.py's Copier on the fake cluster: a transaction aborted before
anything was committed copies the same records again, from the start."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import anyio

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Error
from tests.support.txn import read_committed

TXN_OFFSET_COMMIT = 28
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "transactional_copy.py"


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("transactional_copy", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("transactional_copy", module)
    spec.loader.exec_module(module)
    return module


async def test_the_first_transaction_aborted_copies_from_the_start_again() -> None:
    example = load_example()
    sent = {p: [b"p%d-%d" % (p, i) for i in range(5)] for p in range(2)}
    with anyio.fail_after(30):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("src", partitions=2)
            fc.create_topic("dst", partitions=2)
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as plain:
                for p, values in sent.items():
                    for value in values:
                        await plain.send("src", value, partition=p)
            consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
                "src",
                bootstrap_servers=fc.bootstrap,
                group_id="g",
                enable_auto_commit=False,
                isolation_level="read_committed",
                auto_offset_reset="earliest",
            )
            producer = AIOKafkaProducer(
                bootstrap_servers=fc.bootstrap, transactional_id="copier", retry_backoff_ms=10
            )
            async with consumer, producer:
                # the first transaction's offsets are refused (abortable): nothing is committed yet
                fc.intercept(TXN_OFFSET_COMMIT, lambda *_: Error(E.ILLEGAL_GENERATION), times=1)
                copier = example.Copier(consumer, producer, "dst", example.upper, 100)
                while copier.copied < 10:
                    await copier.copy_one_batch()
                assert copier.aborts == 1
            got = await read_committed(fc.bootstrap, [TopicPartition("dst", p) for p in range(2)])
    assert {tp.partition: [r.value for r in rs] for tp, rs in got.items()} == {
        p: [v.upper() for v in values] for p, values in sent.items()
    }
