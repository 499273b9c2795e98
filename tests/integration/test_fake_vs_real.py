"""The fake cluster answers like a real Kafka broker, field by field.

The same requests go to a one-node KRaft cluster and to a one-node FakeCluster; the
responses are compared after masking only what legitimately differs (node ids, hosts,
ports, topic ids, cluster and controller ids, producer ids, throttle times, timestamps).
Error codes, offsets, epochs, record bytes and the shape of every response must match.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.admin.types import NewTopic
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.messages import (
    ApiVersionsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    Struct,
    SyncGroupRequest,
)
from aiokafka_lead.protocol.versions import negotiate
from aiokafka_lead.records import MemoryRecords, RecordBatch, RecordBatchBuilder
from aiokafka_lead.testing.fake import FakeCluster

pytestmark = pytest.mark.integration

#: fields whose values differ between any two clusters; compared by presence only
MASKED = {
    "node_id",
    "host",
    "port",
    "rack",
    "topic_id",
    "cluster_id",
    "controller_id",
    "throttle_time_ms",
    "leader_id",
    "leader",
    "producer_id",
    "timestamp",
    "log_append_time_ms",
    "member_id",
}
#: node id lists: only their length is compared
NODE_LISTS = {"replica_nodes", "isr_nodes", "offline_replicas"}
GROUP = "fake-vs-real-group"
#: a fresh cluster warming up
RETRY_LATER = (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE)
TIMESTAMP = 1_700_000_000_000


def normalize(obj: Any) -> Any:
    """A comparable tree of a decoded response, with the MASKED values blanked."""
    if isinstance(obj, Struct):
        out: dict[str, Any] = {}
        for field in type(obj)._FIELDS:
            value = getattr(obj, field.attr)
            if field.attr in MASKED:
                out[field.attr] = "<masked>" if value is not None else None
            elif field.attr in NODE_LISTS:
                out[field.attr] = len(value)
            else:
                out[field.attr] = normalize(value)
        return out
    if isinstance(obj, list):
        return [normalize(item) for item in obj]
    if isinstance(obj, memoryview):
        return bytes(obj)
    return obj


def plain_batch() -> bytes:
    """A non-idempotent batch: identical bytes on both sides."""
    builder = RecordBatchBuilder()
    builder.append(TIMESTAMP, b"k0", b"v0", [("h", b"1")])
    builder.append(TIMESTAMP + 1, None, b"v1")
    builder.append(TIMESTAMP + 2, b"k2", None)
    return builder.build()


def idempotent_batch(producer_id: int) -> bytes:
    builder = RecordBatchBuilder()
    builder.append(TIMESTAMP + 3, b"k3", b"v3")
    builder.append(TIMESTAMP + 4, b"k4", b"v4")
    return builder.build(producer_id, 0, 0)


def produce(topic: str, records: bytes) -> ProduceRequest:
    return ProduceRequest(
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)],
            )
        ],
    )


async def scenario(conn: Connection, topic: str) -> dict[str, Any]:
    """The requests of the comparison, in order; returns decoded responses by step name."""
    out: dict[str, Any] = {}
    out["api_versions"] = await conn.send(
        ApiVersionsRequest(client_software_name="fake-vs-real", client_software_version="1"), version=4
    )
    metadata = await conn.send(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), version=12
    )
    out["metadata"] = metadata
    part = metadata.topics[0].partitions[0]
    topic_id, epoch = metadata.topics[0].topic_id, part.leader_epoch
    out["metadata_unknown"] = await conn.send(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic + "-missing")]),
        version=12,
    )
    # A fresh real cluster needs a moment before it hands out producer ids (error 14).
    with anyio.fail_after(60):
        while True:
            pid = await conn.send(
                InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000),
                version=5,
            )
            if pid.error_code not in RETRY_LATER:
                break
            await anyio.sleep(0.2)
    out["init_producer_id_empty_txn_id"] = await conn.send(
        InitProducerIdRequest(transactional_id="", transaction_timeout_ms=60_000), version=5
    )
    out["init_producer_id"] = pid
    out["produce_plain"] = await conn.send(produce(topic, plain_batch()), version=12)
    out["produce_idempotent"] = await conn.send(produce(topic, idempotent_batch(pid.producer_id)), version=12)
    out["produce_duplicate"] = await conn.send(produce(topic, idempotent_batch(pid.producer_id)), version=12)
    out["produce_unknown_partition"] = await conn.send(
        ProduceRequest(
            acks=-1,
            timeout_ms=10_000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=topic,
                    partition_data=[ProduceRequest.PartitionProduceData(index=9, records=plain_batch())],
                )
            ],
        ),
        version=12,
    )
    out["fetch"] = await conn.send(fetch(topic_id, 0, epoch), version=17)
    out["fetch_fenced"] = await conn.send(fetch(topic_id, 0, epoch - 1 if epoch else 99), version=17)
    out["fetch_out_of_range"] = await conn.send(fetch(topic_id, 99, epoch), version=17)
    for name, spec in (("earliest", -2), ("latest", -1), ("max_timestamp", -3), ("by_time", TIMESTAMP + 1)):
        out[f"list_offsets_{name}"] = await conn.send(
            ListOffsetsRequest(
                replica_id=-1,
                isolation_level=0,
                topics=[
                    ListOffsetsRequest.ListOffsetsTopic(
                        name=topic,
                        partitions=[
                            ListOffsetsRequest.ListOffsetsPartition(
                                partition_index=0, current_leader_epoch=epoch, timestamp=spec
                            )
                        ],
                    )
                ],
                timeout_ms=10_000,
            ),
            version=10,
        )
    out["offset_for_leader_epoch"] = await conn.send(
        OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                    topic=topic,
                    partitions=[
                        OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                            partition=0, current_leader_epoch=epoch, leader_epoch=e
                        )
                        for e in (epoch, epoch + 5)
                    ],
                )
            ],
        ),
        version=4,
    )
    # A fresh real cluster creates __consumer_offsets on first use: wait that out.
    with anyio.fail_after(60):
        while True:
            found = await conn.send(FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), version=6)
            if found.coordinators[0].error_code not in RETRY_LATER:
                break
            await anyio.sleep(0.2)
    out["find_coordinator"] = found
    out["find_coordinator_v3"] = await conn.send(FindCoordinatorRequest(key=GROUP, key_type=0), version=3)
    out["fetch_at_end"] = await conn.send(fetch(topic_id, 5, epoch), version=17)
    out["fetch_not_diverged"] = await conn.send(
        fetch(topic_id, 5, epoch, last_fetched_epoch=epoch), version=17
    )
    out["metadata_v13_all"] = await conn.send(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), version=13
    )
    out["metadata_v1"] = await conn.send(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), version=1
    )
    out["produce_bad_acks"] = await conn.send(
        ProduceRequest(
            acks=2,
            timeout_ms=10_000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=topic,
                    partition_data=[ProduceRequest.PartitionProduceData(index=0, records=plain_batch())],
                )
            ],
        ),
        version=12,
    )
    out.update(await every_version(conn, topic, topic_id, epoch))
    out.update(await group_steps(conn, topic))
    for version in range(3, 13):
        out[f"produce_v{version}"] = await conn.send(produce(topic, plain_batch()), version=version)
    return out


async def every_version(conn: Connection, topic: str, topic_id: uuid.UUID, epoch: int) -> dict[str, Any]:
    """Reads at every version both sides share: the encoders differ per version."""
    out: dict[str, Any] = {}
    wanted = [MetadataRequest.MetadataRequestTopic(name=topic)]
    for version in range(0, 14):
        out[f"metadata_v{version}"] = await conn.send(MetadataRequest(topics=wanted), version=version)
    for version in range(4, 18):
        request = fetch(topic_id, 1, epoch if version >= 9 else -1)
        request.topics[0].topic = topic if version < 13 else ""
        if version < 13:
            request.topics[0].topic_id = uuid.UUID(int=0)
        out[f"fetch_v{version}"] = await conn.send(request, version=version)
    for version in range(1, 11):
        partition = ListOffsetsRequest.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=epoch if version >= 4 else -1, timestamp=-1
        )
        out[f"list_offsets_v{version}"] = await conn.send(
            ListOffsetsRequest(
                replica_id=-1,
                topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[partition])],
            ),
            version=version,
        )
    return out


async def group_steps(conn: Connection, topic: str) -> dict[str, Any]:
    """One member through the classic group protocol, then offsets (coordinator = the node)."""
    out: dict[str, Any] = {}

    def join(member_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"m")],
        )

    first = await conn.send(join(""), version=9)
    out["join_member_id_required"] = first
    joined = await conn.send(join(first.member_id), version=9)
    out["join"] = joined
    member_id, generation = joined.member_id, joined.generation_id
    out["sync"] = await conn.send(
        SyncGroupRequest(
            group_id=GROUP,
            generation_id=generation,
            member_id=member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id, assignment=b"a")],
        ),
        version=5,
    )
    out["heartbeat"] = await conn.send(
        HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id=member_id), version=4
    )
    out["heartbeat_bad_generation"] = await conn.send(
        HeartbeatRequest(group_id=GROUP, generation_id=generation + 7, member_id=member_id),
        version=4,
    )
    out["heartbeat_unknown_member"] = await conn.send(
        HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id="nobody"), version=4
    )
    out["offset_commit"] = await conn.send(
        OffsetCommitRequest(
            group_id=GROUP,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=3,
                            committed_leader_epoch=0,
                            committed_metadata="meta",
                        )
                    ],
                )
            ],
        ),
        version=9,
    )
    out["offset_fetch_v9"] = await conn.send(
        OffsetFetchRequest(
            groups=[
                OffsetFetchRequest.OffsetFetchRequestGroup(
                    group_id=GROUP,
                    member_id=None,
                    member_epoch=-1,
                    topics=[OffsetFetchRequest.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])],
                )
            ],
        ),
        version=9,
    )
    out["offset_fetch_v7_all"] = await conn.send(OffsetFetchRequest(group_id=GROUP, topics=None), version=7)
    out["leave"] = await conn.send(
        LeaveGroupRequest(
            group_id=GROUP,
            members=[LeaveGroupRequest.MemberIdentity(member_id=member_id, reason="done")],
        ),
        version=5,
    )
    return out


def fetch(topic_id: uuid.UUID, offset: int, epoch: int, *, last_fetched_epoch: int = -1) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic_id=topic_id,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=0,
                        current_leader_epoch=epoch,
                        fetch_offset=offset,
                        last_fetched_epoch=last_fetched_epoch,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
    )


Scenario = Callable[[Connection, str], Awaitable[dict[str, Any]]]


async def run_against(host: str, port: int, topic: str, steps: Scenario | None = None) -> dict[str, Any]:
    """Run ``steps`` (default: this module's scenario) over one connection to host:port."""
    conn = Connection(host, port, ConnectionConfig(request_timeout_ms=30_000))
    async with anyio.create_task_group() as tg:
        await tg.start(conn.run)
        try:
            return await (steps or scenario)(conn, topic)
        finally:
            await conn.close()


def _batches(data: bytes) -> list[RecordBatch]:
    return [b for b in MemoryRecords(data) if isinstance(b, RecordBatch)]


async def test_fake_answers_like_a_real_broker(kafka_cluster_1: Any) -> None:
    topic = f"fake-vs-real-{uuid.uuid4().hex[:8]}"
    bootstrap = kafka_cluster_1.bootstrap()
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        # retention.ms=-1: the scenario writes fixed 2023 timestamps, which the brokers'
        # retention check could delete mid-scenario
        await admin.create_topics(
            [NewTopic(topic, num_partitions=1, replication_factor=1, topic_configs={"retention.ms": "-1"})]
        )
        with anyio.fail_after(30):
            while True:
                (described,) = await admin.describe_topics([topic])
                if described.partitions and described.partitions[0].leader >= 0:
                    break
                await anyio.sleep(0.1)
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    real = await run_against(host, int(port), topic)

    async with FakeCluster(brokers=1) as fc:
        fc.create_topic(topic, partitions=1, replication_factor=1)
        fake = await run_against(*fc.address(1), topic)

    # ApiVersions: the ranges differ (a real broker has many more APIs); what matters is
    # that a client negotiates the same version of every API the fake implements.
    assert fake["api_versions"].error_code == real["api_versions"].error_code == E.NONE
    fake_table, real_table = negotiate(fake["api_versions"]), negotiate(real["api_versions"])
    for api_key, version in fake_table:
        assert real_table.version_for(api_key) == version, api_key

    # Record bytes: the plain batch comes back byte for byte; the idempotent one differs
    # only in its producer id (and so its CRC), so compare its header fields and records.
    fake_records = bytes(fake["fetch"].responses[0].partitions[0].records)
    real_records = bytes(real["fetch"].responses[0].partitions[0].records)
    plain_len = len(plain_batch())
    assert fake_records[:plain_len] == real_records[:plain_len]
    fake_batches, real_batches = _batches(fake_records), _batches(real_records)
    assert [(b.base_offset, b.record_count) for b in fake_batches] == [
        (b.base_offset, b.record_count) for b in real_batches
    ]
    (_, fake_b), (_, real_b) = fake_batches, real_batches
    for attr in (
        "base_offset",
        "partition_leader_epoch",
        "last_offset_delta",
        "attributes",
        "producer_epoch",
        "base_sequence",
        "record_count",
        "base_timestamp",
    ):
        assert getattr(fake_b, attr) == getattr(real_b, attr), attr
    assert fake_b.records() == real_b.records()
    assert fake_b.producer_id == fake["init_producer_id"].producer_id
    assert real_b.producer_id == real["init_producer_id"].producer_id

    for step in real:
        if step == "api_versions":
            continue
        f, r = normalize(fake[step]), normalize(real[step])
        if step == "fetch" or step.startswith("fetch_v"):
            fr = bytes(fake[step].responses[0].partitions[0].records)
            rr = bytes(real[step].responses[0].partitions[0].records)
            assert (fr[:plain_len], len(fr)) == (rr[:plain_len], len(rr)), step
            for side in (f, r):
                side["responses"][0]["partitions"][0]["records"] = "<compared above>"
        assert f == r, f"{step}:\n fake={f}\n real={r}"
