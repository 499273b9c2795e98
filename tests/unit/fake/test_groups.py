"""Classic group protocol on the fake coordinator: two members join, sync, commit, fetch."""

from __future__ import annotations

import anyio

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.messages import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.fake.util import DEADLINE, connect

GROUP = "g"


def join_request(member_id: str, metadata: bytes, rebalance_timeout_ms: int = 3_000) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=rebalance_timeout_ms,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=metadata)],
    )


def assign(member_id: str, data: bytes) -> SyncGroupRequest.SyncGroupRequestAssignment:
    return SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id, assignment=data)


async def join(
    conn: Connection, metadata: bytes, member_id: str = "", rebalance_timeout_ms: int = 3_000
) -> tuple[str, object]:
    """JoinGroup v9 including the MEMBER_ID_REQUIRED round trip."""
    response = await conn.send(join_request(member_id, metadata, rebalance_timeout_ms))
    if response.error_code == E.MEMBER_ID_REQUIRED:
        assert response.member_id
        response = await conn.send(join_request(response.member_id, metadata, rebalance_timeout_ms))
    assert response.error_code == E.NONE, response
    return response.member_id, response


async def test_two_members_join_sync_commit_and_fetch() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=2)
            async with connect(fc, 1) as any_conn:
                found = await any_conn.send(FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]))
            coordinator = found.coordinators[0].node_id
            assert coordinator == fc.coordinator_for(GROUP)
            assert (found.coordinators[0].host, found.coordinators[0].port) == fc.address(coordinator)
            async with connect(fc, coordinator) as a, connect(fc, coordinator) as b:
                # A joins alone: generation 1, A leads.
                a_id, first = await join(a, b"meta-a")
                assert (first.generation_id, first.leader, len(first.members)) == (1, a_id, 1)
                sync = await a.send(
                    SyncGroupRequest(
                        group_id=GROUP,
                        generation_id=1,
                        member_id=a_id,
                        assignments=[assign(a_id, b"all")],
                    )
                )
                assert (sync.error_code, sync.assignment) == (0, b"all")

                # B joins: a rebalance starts; A learns it from its heartbeat and rejoins.
                results: dict[str, object] = {}

                async def join_b() -> None:
                    results["b"] = await join(b, b"meta-b")

                async with anyio.create_task_group() as tg:
                    tg.start_soon(join_b)
                    while True:
                        beat = await a.send(HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=a_id))
                        if beat.error_code == E.REBALANCE_IN_PROGRESS:
                            break
                        assert beat.error_code == E.NONE
                    _, a_join = await join(a, b"meta-a", a_id)
                b_id, b_join = results["b"]  # type: ignore[misc]
                assert a_join.generation_id == b_join.generation_id == 2
                assert a_join.leader == b_join.leader == a_id
                assert {(m.member_id, m.metadata) for m in a_join.members} == {
                    (a_id, b"meta-a"),
                    (b_id, b"meta-b"),
                }
                assert b_join.members == []  # only the leader gets member metadata

                # B syncs first and waits for the leader's assignments.
                synced: dict[str, object] = {}

                async def sync_b() -> None:
                    request = SyncGroupRequest(group_id=GROUP, generation_id=2, member_id=b_id)
                    synced["b"] = await b.send(request)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(sync_b)
                    a_sync = await a.send(
                        SyncGroupRequest(
                            group_id=GROUP,
                            generation_id=2,
                            member_id=a_id,
                            assignments=[
                                assign(a_id, b"p0"),
                                assign(b_id, b"p1"),
                            ],
                        )
                    )
                assert a_sync.assignment == b"p0"
                assert synced["b"].assignment == b"p1"  # type: ignore[attr-defined]

                stale = await b.send(HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=b_id))
                assert stale.error_code == E.ILLEGAL_GENERATION
                commit = await b.send(
                    OffsetCommitRequest(
                        group_id=GROUP,
                        generation_id_or_member_epoch=2,
                        member_id=b_id,
                        topics=[
                            OffsetCommitRequest.OffsetCommitRequestTopic(
                                name="t",
                                partitions=[
                                    OffsetCommitRequest.OffsetCommitRequestPartition(
                                        partition_index=1,
                                        committed_offset=42,
                                        committed_leader_epoch=0,
                                        committed_metadata="m",
                                    )
                                ],
                            )
                        ],
                    )
                )
                assert commit.topics[0].partitions[0].error_code == E.NONE
                fetched = await a.send(
                    OffsetFetchRequest(
                        group_id=GROUP,
                        topics=[
                            OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])
                        ],
                    ),
                    version=7,
                )
                parts = fetched.topics[0].partitions
                assert [(p.partition_index, p.committed_offset, p.metadata) for p in parts] == [
                    (0, -1, ""),
                    (1, 42, "m"),
                ]

                left = await b.send(
                    LeaveGroupRequest(
                        group_id=GROUP, members=[LeaveGroupRequest.MemberIdentity(member_id=b_id)]
                    )
                )
                assert left.members[0].error_code == E.NONE
                beat = await a.send(HeartbeatRequest(group_id=GROUP, generation_id=2, member_id=a_id))
                assert beat.error_code == E.REBALANCE_IN_PROGRESS  # B left: A must rejoin

            async with AdminClient(bootstrap_servers=fc.bootstrap) as admin:
                offsets = await admin.list_consumer_group_offsets(GROUP)
            assert offsets[TopicPartition("t", 1)].offset == 42


async def test_not_coordinator_and_unknown_member() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.set_coordinator(GROUP, 2)
            async with connect(fc, 1) as wrong, connect(fc, 2) as right:
                assert (await wrong.send(join_request("", b""))).error_code == E.NOT_COORDINATOR
                assert (await right.send(join_request("nobody", b""))).error_code == E.UNKNOWN_MEMBER_ID
                beat = await right.send(HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="x"))
                assert beat.error_code == E.UNKNOWN_MEMBER_ID


async def test_absent_member_is_dropped_after_the_rebalance_timeout() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc, connect(fc, 1) as a, connect(fc, 1) as b:
            a_id, _ = await join(a, b"a", rebalance_timeout_ms=50)
            # A never rejoins: B's join completes without A after the 50 ms timeout.
            b_id, response = await join(b, b"b", rebalance_timeout_ms=50)
            assert (response.generation_id, response.leader) == (2, b_id)  # type: ignore[attr-defined]
            assert [m.member_id for m in response.members] == [b_id]  # type: ignore[attr-defined]
            beat = await a.send(HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=a_id))
            assert beat.error_code == E.UNKNOWN_MEMBER_ID
