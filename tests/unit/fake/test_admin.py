"""The real admin client against the fake: metadata, ListOffsets, committed offsets."""

from __future__ import annotations

import anyio
import pytest

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.admin.types import OffsetSpec
from aiokafka_lead.errors import UnknownTopicOrPartitionError
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.fake.util import DEADLINE, batch, connect, produce_request

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


async def test_describe_topics() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            topic_id = fc.create_topic("t", partitions=2, leaders=[2, 3])
            fc.move_leader(TP1, 1)
            async with AdminClient(bootstrap_servers=fc.bootstrap) as admin:
                (topic,) = await admin.describe_topics(["t"])
                with pytest.raises(UnknownTopicOrPartitionError):
                    await admin.describe_topics(["missing"])
            assert topic.name == "t" and topic.topic_id == topic_id
            assert [(p.partition, p.leader, p.leader_epoch) for p in topic.partitions] == [
                (0, 2, 0),
                (1, 1, 1),
            ]
            assert set(topic.partitions[0].replicas) == {1, 2, 3}


async def test_list_offsets() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=2, leaders=[2, 3])
            async with connect(fc, 2) as conn:
                await conn.send(produce_request("t", 0, batch([b"a", b"b"], timestamp_ms=1000)))
                await conn.send(produce_request("t", 0, batch([b"c"], timestamp_ms=5000)))
            async with AdminClient(bootstrap_servers=fc.bootstrap) as admin:
                latest = await admin.list_offsets({TP0: OffsetSpec.LATEST, TP1: OffsetSpec.LATEST})
                earliest = await admin.list_offsets({TP0: OffsetSpec.EARLIEST})
                newest = await admin.list_offsets({TP0: OffsetSpec.MAX_TIMESTAMP})
                by_time = await admin.list_offsets({TP0: 1001})
                too_late = await admin.list_offsets({TP0: 9999})
            assert (latest[TP0].offset, latest[TP0].leader_epoch) == (3, 0)
            assert latest[TP1].offset == 0
            assert earliest[TP0].offset == 0
            assert (newest[TP0].offset, newest[TP0].timestamp) == (2, 5000)
            assert (by_time[TP0].offset, by_time[TP0].timestamp) == (1, 1001)
            assert too_late[TP0].offset == -1


async def test_list_offsets_follows_a_moved_leader() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", leaders=[1])
            async with AdminClient(
                bootstrap_servers=fc.bootstrap, retry_backoff_ms=1, retry_backoff_max_ms=5
            ) as admin:
                await admin.describe_topics(["t"])
                fc.move_leader(TP0, 3)
                result = await admin.list_offsets({TP0: OffsetSpec.LATEST})
            assert (result[TP0].offset, result[TP0].leader_epoch) == (0, 1)
            # The first try went to the old leader (epoch check failed), the retry to node 3.
            lists = fc.requests.select(api_key=2)
            assert [r.node_id for r in lists][-1] == 3
