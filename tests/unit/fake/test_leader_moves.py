"""move_leader and KIP-951 hints as a client decodes them; metadata lag; restarts; KIP-320."""

from __future__ import annotations

import anyio
import pytest

from aiokafka_lead.core.refresher import snapshot_from_response
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import KafkaConnectionError
from aiokafka_lead.metadata import MetadataStore
from aiokafka_lead.metadata.model import BrokerNode, HintOutcome, LeaderHint
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.messages import (
    MetadataRequest,
    OffsetForLeaderEpochRequest,
)
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.fake.util import (
    DEADLINE,
    batch,
    connect,
    fetch_partition,
    fetch_request,
    produce_partition,
    produce_request,
)

TP = ("t", 0)

#: hint mode -> (leader_id, leader_epoch, endpoint node ids) after moves 1 -> 3 -> 2
EXPECTED = {
    "current": (2, 2, [2]),
    "none": (-1, -1, []),
    "stale": (2, 0, [2]),
    "same_epoch": (2, 1, [2]),
    "unknown_node": (1003, 2, []),
    "endpoints_only": (2, 2, [2]),
}


async def _moved(fc: FakeCluster, hint: str) -> None:
    fc.create_topic("t", leaders=[1])
    fc.move_leader(TP, 3)  # the client is assumed to know epoch 1
    assert fc.move_leader(TP, 2, hint=hint) == 2
    assert (fc.leader(TP), fc.leader_epoch(TP)) == (2, 2)


@pytest.mark.parametrize("hint", list(EXPECTED))
async def test_produce_v12_hint(hint: str) -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            await _moved(fc, hint)
            async with connect(fc, 1) as conn:
                response = await conn.send(produce_request("t", 0, batch([b"x"])), version=12)
            part = produce_partition(response)
            leader_id, leader_epoch, nodes = EXPECTED[hint]
            assert part.error_code == E.NOT_LEADER_OR_FOLLOWER
            assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (
                leader_id,
                leader_epoch,
            )
            assert [(e.node_id, e.host, e.port) for e in response.node_endpoints] == [
                (n, *fc.address(n)) for n in nodes
            ]
            assert fc.records(TP) == []


@pytest.mark.parametrize("hint", list(EXPECTED))
async def test_fetch_v17_hint(hint: str) -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            await _moved(fc, hint)
            async with connect(fc, 1) as conn:
                request = fetch_request(fc, "t", 0, 0, current_leader_epoch=1)
                response = await conn.send(request, version=17)
            part = fetch_partition(response)
            leader_id, leader_epoch, nodes = EXPECTED[hint]
            assert part.error_code == E.NOT_LEADER_OR_FOLLOWER
            assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (
                leader_id,
                leader_epoch,
            )
            assert [(e.node_id, e.host, e.port) for e in response.node_endpoints] == [
                (n, *fc.address(n)) for n in nodes
            ]


async def test_fenced_epoch_on_the_new_leader_carries_a_hint() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            await _moved(fc, "current")
            async with connect(fc, 2) as conn:
                request = fetch_request(fc, "t", 0, 0, current_leader_epoch=1)
                response = await conn.send(request, version=17)
            part = fetch_partition(response)
            assert part.error_code == E.FENCED_LEADER_EPOCH
            assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (2, 2)
            assert [e.node_id for e in response.node_endpoints] == [2]


async def test_old_versions_get_a_plain_not_leader() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            await _moved(fc, "current")
            async with connect(fc, 1) as conn:
                produce = await conn.send(produce_request("t", 0, batch([b"x"])), version=9)
                fetch = await conn.send(fetch_request(fc, "t", 0, 0), version=15)
            for part in (produce_partition(produce), fetch_partition(fetch)):
                assert part.error_code == E.NOT_LEADER_OR_FOLLOWER
                assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (-1, -1)
            assert produce.node_endpoints == [] and fetch.node_endpoints == []


async def test_pre_kip951_broker_caps_versions() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3, max_versions={0: 9, 1: 15}) as fc:
            await _moved(fc, "current")
            async with connect(fc, 1) as conn:
                assert (conn.version_for(0), conn.version_for(1)) == (9, 15)
                response = await conn.send(produce_request("t", 0, batch([b"x"])))
            assert produce_partition(response).current_leader.leader_id == -1
            assert fc.requests[-1].api_version == 9


async def _metadata(fc: FakeCluster, node_id: int) -> dict[int, tuple[int, int]]:
    async with connect(fc, node_id) as conn:
        response = await conn.send(MetadataRequest(topics=None))
    return {p.partition_index: (p.leader_id, p.leader_epoch) for p in response.topics[0].partitions}


async def test_metadata_lag_freezes_chosen_brokers() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=2, leaders=[1, 1])
            fc.lag_metadata([1], partitions=[TP])
            fc.move_leader(TP, 2)
            fc.move_leader(("t", 1), 3)
            assert await _metadata(fc, 1) == {0: (1, 0), 1: (3, 1)}  # only t-0 is frozen
            assert await _metadata(fc, 2) == {0: (2, 1), 1: (3, 1)}
            fc.unlag_metadata()
            assert await _metadata(fc, 1) == {0: (2, 1), 1: (3, 1)}


async def test_restart_on_new_port_revealed_only_by_node_endpoints() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", leaders=[1])
            old_port = fc.address(2)[1]
            fc.lag_metadata([1, 3])  # Metadata keeps the old address of node 2 for a while
            await fc.restart_node(2, new_port=True)
            new_port = fc.address(2)[1]
            assert new_port != old_port
            fc.move_leader(TP, 2, hint="endpoints_only")
            async with connect(fc, 1) as conn:
                metadata = await conn.send(MetadataRequest(topics=None))
                hint = await conn.send(produce_request("t", 0, batch([b"x"])))
            assert all(b.node_id != 2 for b in metadata.brokers)  # endpoints_only hides node 2
            assert [(e.node_id, e.port) for e in hint.node_endpoints] == [(2, new_port)]
            fc.unhide_nodes()
            async with connect(fc, 3) as conn:
                metadata = await conn.send(MetadataRequest(topics=None))
            assert {b.node_id: b.port for b in metadata.brokers}[2] == old_port
            stale = Connection("127.0.0.1", old_port, ConnectionConfig(connect_timeout_ms=1000))
            async with anyio.create_task_group() as tg:
                with pytest.raises(KafkaConnectionError):
                    await tg.start(stale.run)  # nothing listens on the old port any more
            # The new address takes writes.
            async with connect(fc, 2) as conn:
                ok = await conn.send(produce_request("t", 0, batch([b"x"])))
            assert produce_partition(ok).error_code == E.NONE


async def test_truncation_makes_offset_for_leader_epoch_and_fetch_diverge() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", leaders=[1])
            async with connect(fc, 1) as conn:
                for i in range(10):
                    await conn.send(produce_request("t", 0, batch([b"%d" % i])))
            fc.truncate(TP, 5)
            fc.move_leader(TP, 2)  # elected with only offsets 0..4: epoch 1 starts at 5
            assert fc.high_watermark(TP) == 5
            async with connect(fc, 2) as conn:
                request = OffsetForLeaderEpochRequest(
                    replica_id=-1,
                    topics=[
                        OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                            topic="t",
                            partitions=[
                                OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                                    partition=0, current_leader_epoch=1, leader_epoch=epoch
                                )
                                for epoch in (0, 1, 7)
                            ],
                        )
                    ],
                )
                ofle = await conn.send(request)
                results = [(p.error_code, p.leader_epoch, p.end_offset) for p in ofle.topics[0].partitions]
                assert results == [(0, 0, 5), (0, 1, 5), (0, -1, -1)]
                fetch = fetch_request(fc, "t", 0, 10, current_leader_epoch=1, last_fetched_epoch=0)
                part = fetch_partition(await conn.send(fetch))
                assert part.error_code == E.NONE
                assert (part.diverging_epoch.epoch, part.diverging_epoch.end_offset) == (0, 5)
                assert bytes(part.records) == b""
                # A consumer at offset 5 of epoch 0 has not diverged.
                fine = fetch_request(fc, "t", 0, 5, current_leader_epoch=1, last_fetched_epoch=0)
                part = fetch_partition(await conn.send(fine))
                assert (part.error_code, part.diverging_epoch.epoch) == (0, -1)


#: what the project's MetadataStore must make of each hint mode (guide section 2)
OUTCOMES = {
    "current": HintOutcome.APPLIED,
    "none": HintOutcome.INVALID,
    "stale": HintOutcome.STALE_EPOCH,
    "same_epoch": HintOutcome.STALE_EPOCH,
    "unknown_node": HintOutcome.UNKNOWN_NODE,
    "endpoints_only": HintOutcome.APPLIED,
}


@pytest.mark.parametrize("hint", list(OUTCOMES))
async def test_each_hint_mode_drives_the_intended_store_outcome(hint: str) -> None:
    """The hint modes are what KIP-951 client tests need: checked against the real store."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", leaders=[1])
            fc.move_leader(TP, 3)
            if hint == "endpoints_only":
                fc.hidden_nodes.add(2)  # the client never heard of node 2 from Metadata
            store = MetadataStore()
            async with connect(fc, 1) as conn:
                metadata = await conn.send(MetadataRequest(topics=None))
                store.apply_metadata(snapshot_from_response(metadata, 13, None))
                assert store.leader_epoch(TopicPartition(*TP)) == 1
                fc.move_leader(TP, 2, hint=hint)
                response = await conn.send(produce_request("t", 0, batch([b"x"])))
            part = produce_partition(response)
            outcomes = store.apply_leader_hints(
                [LeaderHint("t", 0, part.current_leader.leader_id, part.current_leader.leader_epoch)],
                [BrokerNode(e.node_id, e.host, e.port, e.rack) for e in response.node_endpoints],
            )
            assert outcomes[TopicPartition(*TP)] is OUTCOMES[hint]
            if OUTCOMES[hint] is HintOutcome.APPLIED:
                leader = store.leader_for(TopicPartition(*TP))
                assert leader is not None and (leader.node_id, leader.port) == (2, fc.address(2)[1])
