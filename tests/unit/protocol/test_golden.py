"""Golden bytes: one table drives both encode and decode (h11 style).

Hand-checked against the Kafka protocol guide (kafka.apache.org/protocol): non-flexible
versions use int16 string / int32 array lengths; flexible versions use uvarint N+1
lengths and end every struct with a tagged-field section (KIP-482).
"""

from __future__ import annotations

import uuid

import pytest

from aiokafka_lead.errors import DecodeError, UnsupportedVersionError
from aiokafka_lead.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ConsumerProtocolSubscription,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    MetadataRequest,
    ProduceRequest,
    ProduceResponse,
    Versioned,
)

# KIP-951 vectors from docs GUIDE.md (bodies, no header)
PRODUCE_V10_HINT = (
    "02027402000000000006ffffffffffffffffffffffffffffffffffffffffffffffff0100010009"
    "000000020000000500000000000001000d02000000020268000023840000"
)
FETCH_V16_HINT = (
    "00000000000000000000020102030405060708090a0b0c0d0e0f1002000000000006ffffffffffff"
    "ffffffffffffffffffffffffffffffffffff00ffffffff000101090000000200000005000001000d"
    "02000000020268000023840000"
)

P = ProduceResponse
F = FetchResponse
TOPIC_ID = uuid.UUID(bytes=bytes(range(1, 17)))

GOLDEN: list[tuple[str, Versioned, int, str]] = [
    ("ApiVersionsRequest v0 is empty", ApiVersionsRequest(), 0, ""),
    (
        "ApiVersionsRequest v3 compact strings + tags",
        ApiVersionsRequest(client_software_name="a", client_software_version="1"),
        3,
        "02610231" + "00",
    ),
    ("MetadataRequest v1 null topics = all", MetadataRequest(topics=None), 1, "ffffffff"),
    (
        "MetadataRequest v4 null topics, auto-create",
        MetadataRequest(topics=None, allow_auto_topic_creation=True),
        4,
        "ffffffff01",
    ),
    (
        "MetadataRequest v12 flexible, topic by name",
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name="t")],
            allow_auto_topic_creation=False,
        ),
        12,
        "02" + "00" * 16 + "0274" + "00" + "00" + "00" + "00",
    ),
    (
        "HeartbeatRequest v0 non-flexible",
        HeartbeatRequest(group_id="g", generation_id=1, member_id="m"),
        0,
        "000167" + "00000001" + "00016d",
    ),
    (
        "HeartbeatResponse v4 flexible",
        HeartbeatResponse(throttle_time_ms=0, error_code=27),
        4,
        "00000000" + "001b" + "00",
    ),
    (
        "ProduceRequest v3 non-flexible",
        ProduceRequest(
            acks=1,
            timeout_ms=1000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name="t",
                    partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"\1\2")],
                )
            ],
        ),
        3,
        "ffff" + "0001" + "000003e8" + "00000001" + "000174" + "00000001" + "00000000" + "00000002" + "0102",
    ),
    (
        "ProduceRequest v12 flexible",
        ProduceRequest(
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name="t",
                    partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"xyz")],
                )
            ],
        ),
        12,
        "00" + "ffff" + "00007530" + "02" + "0274" + "02" + "00000000" + "0478797a" + "00" + "00" + "00",
    ),
    (
        "ApiVersionsResponse v3 with a top-level tagged int64 (tag 1)",
        ApiVersionsResponse(
            api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=4)],
            finalized_features_epoch=5,
        ),
        3,
        "0000"
        + "02"
        + "0012"
        + "0000"
        + "0004"
        + "00"
        + "00000000"
        + "01"
        + "01"
        + "08"
        + "0000000000000005",
    ),
    (
        "ConsumerProtocolSubscription v0 (data schema, never flexible)",
        ConsumerProtocolSubscription(topics=["a"], user_data=None),
        0,
        "00000001" + "000161" + "ffffffff",
    ),
    (
        "KIP-951 ProduceResponse v10 hint",
        P(
            responses=[
                P.TopicProduceResponse(
                    name="t",
                    partition_responses=[
                        P.PartitionProduceResponse(
                            index=0,
                            error_code=6,
                            base_offset=-1,
                            current_leader=P.LeaderIdAndEpoch(leader_id=2, leader_epoch=5),
                        )
                    ],
                )
            ],
            node_endpoints=[P.NodeEndpoint(node_id=2, host="h", port=9092, rack=None)],
        ),
        10,
        PRODUCE_V10_HINT,
    ),
    (
        "KIP-951 FetchResponse v16 hint",
        F(
            responses=[
                F.FetchableTopicResponse(
                    topic_id=TOPIC_ID,
                    partitions=[
                        F.PartitionData(
                            partition_index=0,
                            error_code=6,
                            high_watermark=-1,
                            last_stable_offset=-1,
                            log_start_offset=-1,
                            aborted_transactions=None,
                            records=None,
                            current_leader=F.LeaderIdAndEpoch(leader_id=2, leader_epoch=5),
                        )
                    ],
                )
            ],
            node_endpoints=[F.NodeEndpoint(node_id=2, host="h", port=9092, rack=None)],
        ),
        16,
        FETCH_V16_HINT,
    ),
]


@pytest.mark.parametrize(("name", "obj", "version", "hexdata"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_encode(name: str, obj: Versioned, version: int, hexdata: str) -> None:
    assert obj.encode(version).hex() == hexdata


@pytest.mark.parametrize(("name", "obj", "version", "hexdata"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_decode(name: str, obj: Versioned, version: int, hexdata: str) -> None:
    assert type(obj).decode(bytes.fromhex(hexdata), version) == obj


def test_kip951_produce_v10_fields() -> None:
    resp = ProduceResponse.decode(bytes.fromhex(PRODUCE_V10_HINT), 10)
    part = resp.responses[0].partition_responses[0]
    assert (part.error_code, part.current_leader.leader_id, part.current_leader.leader_epoch) == (
        6,
        2,
        5,
    )
    [node] = resp.node_endpoints
    assert (node.node_id, node.host, node.port, node.rack) == (2, "h", 9092, None)


def test_kip951_fetch_v16_fields() -> None:
    resp = FetchResponse.decode(bytes.fromhex(FETCH_V16_HINT), 16)
    topic = resp.responses[0]
    assert topic.topic_id == TOPIC_ID
    part = topic.partitions[0]
    assert part.current_leader == FetchResponse.LeaderIdAndEpoch(leader_id=2, leader_epoch=5)
    assert part.records is None
    assert resp.node_endpoints == [FetchResponse.NodeEndpoint(node_id=2, host="h", port=9092, rack=None)]


def test_records_are_views_not_copies() -> None:
    body = ProduceRequest(
        acks=1,
        timeout_ms=1,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"r" * 64)],
            )
        ],
    ).encode(9)
    decoded = ProduceRequest.decode(body, 9)
    records = decoded.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview)
    assert records.obj is body  # a slice of the input, no copy
    assert records == b"r" * 64


def test_unknown_tagged_fields_are_kept_and_re_sent() -> None:
    data = bytes.fromhex("00000000" + "0000" + "01" + "05" + "02" + "6162")
    resp = HeartbeatResponse.decode(data, 4)
    assert resp.unknown_tagged_fields == [(5, b"ab")]
    assert resp == HeartbeatResponse()  # unknown tags do not take part in equality
    assert resp.encode(4) == data


def test_trailing_bytes_are_rejected_unless_allowed() -> None:
    data = HeartbeatResponse(error_code=1).encode(4) + b"\0"
    with pytest.raises(DecodeError, match="trailing"):
        HeartbeatResponse.decode(data, 4)
    assert HeartbeatResponse.decode(data, 4, allow_trailing=True).error_code == 1


def test_non_ignorable_field_in_a_version_without_it_raises_like_java() -> None:
    req = JoinGroupRequest(group_id="g", protocol_type="consumer", group_instance_id="i")
    with pytest.raises(UnsupportedVersionError, match="group_instance_id"):
        req.encode(4)
    assert req.encode(5)


def test_ignorable_field_in_a_version_without_it_is_dropped() -> None:
    req = ProduceRequest(
        acks=1,
        timeout_ms=1,
        topic_data=[ProduceRequest.TopicProduceData(name="t", topic_id=TOPIC_ID)],
    )
    assert ProduceRequest.decode(req.encode(12), 12).topic_data[0].topic_id == uuid.UUID(int=0)


def test_unknown_version() -> None:
    with pytest.raises(UnsupportedVersionError):
        HeartbeatRequest().encode(99)
    with pytest.raises(DecodeError):
        HeartbeatRequest.decode(b"", 99)


def test_unrepresentable_values_raise_value_error() -> None:
    with pytest.raises(ValueError, match="None"):
        HeartbeatRequest(group_id=None).encode(0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        HeartbeatRequest(generation_id=2**31).encode(0)


def test_defaults_and_shape() -> None:
    part = ProduceResponse.PartitionProduceResponse()
    assert part.log_append_time_ms == -1 and part.error_message is None
    assert part.record_errors == [] and part.record_errors is not (
        ProduceResponse.PartitionProduceResponse().record_errors
    )
    assert part.current_leader == ProduceResponse.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
    assert ProduceResponse.TopicProduceResponse().topic_id == uuid.UUID(int=0)
    assert "PartitionProduceResponse(index=0" in repr(part)
    assert not hasattr(part, "__dict__")
    assert ProduceRequest.API_KEY == 0 and ProduceRequest.RESPONSE_CLASS is ProduceResponse
    assert (ProduceRequest.MIN_VERSION, ProduceRequest.FLEXIBLE_MIN_VERSION) == (3, 9)
    assert ProduceRequest.header_version(8) == 1 and ProduceRequest.header_version(9) == 2
    assert ProduceResponse.header_version(8) == 0 and ProduceResponse.header_version(9) == 1
    assert ApiVersionsResponse.header_version(3) == 0


def test_consumer_protocol_version_prefix() -> None:
    from aiokafka_lead.protocol.messages import ConsumerProtocolAssignment as A

    sub = ConsumerProtocolSubscription(topics=["a", "b"], generation_id=3, rack_id="r")
    data = sub.encode_with_version(3)
    assert data[:2] == b"\x00\x03"
    assert ConsumerProtocolSubscription.decode_with_version(data) == (3, sub)
    # a newer peer's version is read with ours; bytes we do not know are ignored
    newer = b"\x00\x09" + sub.encode(3) + b"future"
    assert ConsumerProtocolSubscription.decode_with_version(newer) == (9, sub)
    assignment = A(assigned_partitions=[A.TopicPartition(topic="a", partitions=[0, 2])])
    assert A.decode_with_version(assignment.encode_with_version(0)) == (0, assignment)
    with pytest.raises(DecodeError):
        A.decode_with_version(b"\x00")
