"""Fetch answers no honest broker gives: records that go backwards, records below the
position again and again, a partial batch that never grows. Each ends in a clear error or a
backed-off, logged retry; the other partitions keep flowing."""

from __future__ import annotations

import anyio
import pytest

from aiokafka_lead.errors import CorruptRecordError
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from tests.support.loop_lag import watch_loop
from tests.unit.consumer.util import DEADLINE, consume, consumer, produce
from tests.unit.records.test_offset_order import batch_with_deltas

BAD, GOOD = TopicPartition("t", 0), TopicPartition("t", 1)


async def test_offsets_going_backwards_in_a_batch_are_an_error_naming_the_partition() -> None:
    async with watch_loop() as watch, FakeCluster(brokers=1) as fc:
        fc.create_topic("t", partitions=2)
        fc.partition(BAD).append(batch_with_deltas([2, 1, 0], base_offset=0))
        produce(fc, GOOD, [b"a", b"b"])
        with anyio.fail_after(DEADLINE):
            async with consumer(fc) as c:
                c.assign([GOOD])
                assert [r.value for r in await consume(c, 2)] == [b"a", b"b"]
                c.assign([BAD])
                with pytest.raises(CorruptRecordError, match="offsets in a batch must increase") as info:
                    await consume(c, 3)
                assert (info.value.topic, info.value.partition) == ("t", 0)
                assert await c.position(BAD) == 0  # nothing handed out
    watch.assert_responsive()
