"""send()'s arguments are checked at the call: a bad one fails that call with a clear
error and leaves the producer as it was (no topic remembered, nothing queued, the sender
alive), so every later good call works."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.errors import InvalidTopicError
from aiokafka_lead.records import MemoryRecords
from aiokafka_lead.testing.fake import FakeCluster

METADATA = 3

BAD_SENDS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"topic": None}, TypeError, "topic must be a str, not NoneType"),
    ({"topic": 5}, TypeError, "topic must be a str, not int"),
    ({"topic": ["t"]}, TypeError, "topic must be a str, not list"),
    ({"topic": ""}, InvalidTopicError, "'' is not a valid topic name"),
    ({"topic": "a b"}, InvalidTopicError, "only ASCII letters"),
    ({"topic": "x" * 250}, InvalidTopicError, "250 characters long"),
    ({"timestamp_ms": 2**63}, ValueError, "timestamp_ms must be in 0..9223372036854775807"),
    ({"timestamp_ms": -1}, ValueError, "timestamp_ms must be in 0.."),
    ({"timestamp_ms": 1.5}, TypeError, "timestamp_ms must be an int"),
    ({"timestamp_ms": "1"}, TypeError, "timestamp_ms must be an int"),
    ({"timestamp_ms": True}, TypeError, "timestamp_ms must be an int"),
    ({"headers": [("h",)]}, TypeError, r"headers\[0\] must be a \(str, bytes \| None\) pair"),
    ({"headers": 5}, TypeError, "headers must be an iterable of"),
    ({"headers": "h"}, TypeError, "headers must be an iterable of"),
    ({"headers": {"h": b"v"}}, TypeError, "headers must be an iterable of"),
    ({"headers": [("h", "v")]}, TypeError, r"headers\[0\] value must be bytes or None"),
    ({"headers": [(1, b"v")]}, TypeError, r"headers\[0\] key must be a str"),
    ({"headers": [("\udc80", b"v")]}, ValueError, "cannot be encoded as UTF-8"),
    ({"partition": -1}, ValueError, "partition must be in 0..2147483647, not -1"),
    ({"partition": 2**31}, ValueError, "partition must be in 0..2147483647"),
    ({"partition": "0"}, TypeError, "partition must be an int, not str"),
    ({"partition": 1.0}, TypeError, "partition must be an int, not float"),
    ({"value": "text"}, TypeError, "value must be bytes"),
    ({"key": 5}, TypeError, "key must be bytes"),
]


async def test_bad_arguments_fail_the_call_and_change_nothing() -> None:
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic("t", partitions=2)
        with anyio.fail_after(15):
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, max_block_ms=500) as producer:
                assert (await producer.send_and_wait("t", b"first")).offset == 0
                for changes, error, message in BAD_SENDS:
                    call: dict[str, Any] = {"topic": "t", "value": b"v", **changes}
                    with pytest.raises(error, match=message):
                        await producer.send(**call)
                    assert producer._topics == {"t"}, changes
                    assert producer.metrics()["pending_batches"] == 0, changes
                    assert producer.metrics()["buffer_used"] == 0, changes
                # the sender is alive, the metadata requests name only the good topic
                assert (await producer.send_and_wait("t", b"later", partition=0)).offset >= 0
                await producer.partitions_for("t")
                asked = {t.name for r in fc.requests.select(api_key=METADATA) for t in r.request.topics or ()}
                assert asked == {"t"}


async def test_the_extreme_good_values_go_through() -> None:
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic("t", partitions=1)
        with anyio.fail_after(10):
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, linger_ms=50) as producer:
                first = await producer.send("t", b"a", timestamp_ms=2**63 - 1, headers=[("h", None)])
                second = await producer.send("t", b"b", timestamp_ms=0, headers=())
                third = await producer.send("t", None, key=b"k", headers=None, partition=0)
                assert [(await h).offset for h in (first, second, third)] == [0, 1, 2]
                records = [
                    record
                    for stored in fc.partition(("t", 0)).batches
                    for batch in MemoryRecords(stored.data)
                    for record in batch.records()
                ]
                assert [r.timestamp for r in records[:2]] == [2**63 - 1, 0]
                assert records[0].headers == (("h", None),)


async def test_partitions_for_and_send_batch_check_their_arguments() -> None:
    async with FakeCluster(brokers=1) as fc:
        fc.create_topic("t", partitions=1)
        with anyio.fail_after(10):
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, max_block_ms=500) as producer:
                with pytest.raises(TypeError, match="topic must be a str"):
                    await producer.partitions_for(None)  # type: ignore[arg-type]
                batch = producer.create_batch()
                with pytest.raises(ValueError, match="timestamp_ms must be in"):
                    batch.append(value=b"v", timestamp=-5)
                with pytest.raises(TypeError, match=r"headers\[0\]"):
                    batch.append(value=b"v", headers=[("h",)])  # type: ignore[list-item]
                with pytest.raises(TypeError, match="value must be bytes"):
                    batch.append(value="v")
                assert batch.record_count() == 0
                batch.append(value=b"v")
                with pytest.raises(ValueError, match="partition must be in"):
                    await producer.send_batch(batch, "t", partition=-1)
                with pytest.raises(TypeError, match="topic must be a str"):
                    await producer.send_batch(batch, 7, partition=0)  # type: ignore[arg-type]
                assert producer._topics == set()
                assert (await (await producer.send_batch(batch, "t", partition=0))).offset == 0
