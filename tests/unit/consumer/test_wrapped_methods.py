"""Code that wraps the consumer's public methods on the class (OpenTelemetry's aiokafka
instrumentation wraps ``getone`` and ``getmany``) sees the calls made to each, as with
aiokafka: getone() and ``async for`` never go through getmany() (on the fake cluster;
tests/integration/test_frameworks_otel.py compares the spans on a real one)."""

from __future__ import annotations

from typing import Any

import anyio

from aiokafka_lead import AIOKafkaConsumer
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.consumer.util import DEADLINE, produce


class Counting(AIOKafkaConsumer[bytes, bytes]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[str] = []

    async def getone(self, *partitions: TopicPartition) -> Any:
        self.calls.append("getone")
        return await super().getone(*partitions)

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: float = 0, max_records: Any = None
    ) -> Any:
        self.calls.append("getmany")
        return await super().getmany(*partitions, timeout_ms=timeout_ms, max_records=max_records)


async def test_getone_and_iteration_do_not_call_getmany() -> None:
    tp = TopicPartition("t", 0)
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            produce(fc, tp, [b"a", b"b", b"c"])
            c = Counting(bootstrap_servers=fc.bootstrap, auto_offset_reset="earliest", retry_backoff_ms=20)
            async with c:
                c.assign([tp])
                assert (await c.getone()).value == b"a"
                assert (await c.getone(tp)).value == b"b"
                async for record in c:
                    assert record.value == b"c"
                    break
                assert c.calls == ["getone", "getone", "getone"]
                assert await c.getmany(timeout_ms=10) == {}
                assert c.calls == ["getone", "getone", "getone", "getmany"]
