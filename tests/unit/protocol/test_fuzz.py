"""Fuzz: malformed input raises only DecodeError, never hangs, never allocates from a
hostile length. Seeds are valid messages of the hot APIs; mutations are every
truncation, random bit flips, and 0x7fff/0x7fffffff/uvarint-max length prefixes
written at every offset. Deterministic (seeded), > 10,000 inputs in total."""

from __future__ import annotations

import contextlib
import random
import tracemalloc
import uuid

import pytest

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.protocol.framing import FrameReader, decode_request, decode_response
from aiokafka_lead.protocol.messages import (
    ApiVersionsResponse,
    FetchRequest,
    FetchResponse,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    Versioned,
)

from .test_golden import FETCH_V16_HINT, PRODUCE_V10_HINT

F, M, P = FetchResponse, MetadataResponse, ProduceRequest
TID = uuid.UUID(int=0x0102)


def _fetch(version: int) -> FetchResponse:
    return F(
        session_id=3 if version >= 7 else 0,
        responses=[
            F.FetchableTopicResponse(
                topic="t",
                topic_id=TID,
                partitions=[
                    F.PartitionData(
                        partition_index=i,
                        high_watermark=10,
                        aborted_transactions=[F.AbortedTransaction(producer_id=1, first_offset=2)],
                        records=b"\x00" * 12,
                    )
                    for i in range(2)
                ],
            )
        ],
        node_endpoints=[F.NodeEndpoint(node_id=1, host="b1", port=9092, rack="r")] if version >= 16 else [],
    )


def _produce(version: int) -> ProduceRequest:
    return P(
        transactional_id="tx",
        acks=-1,
        timeout_ms=100,
        topic_data=[
            P.TopicProduceData(
                name="topic",
                partition_data=[P.PartitionProduceData(index=1, records=b"\x01" * 10)],
            )
        ],
    )


def _metadata(version: int) -> MetadataResponse:
    return M(
        brokers=[M.MetadataResponseBroker(node_id=1, host="h", port=1, rack=None)],
        cluster_id="c",
        topics=[
            M.MetadataResponseTopic(
                name="t",
                topic_id=TID,
                partitions=[
                    M.MetadataResponsePartition(
                        partition_index=0, leader_id=1, replica_nodes=[1, 2], isr_nodes=[1]
                    )
                ],
            )
        ],
    )


SEEDS: list[tuple[type[Versioned], int, bytes]] = [
    (ProduceResponse, 10, bytes.fromhex(PRODUCE_V10_HINT)),
    (FetchResponse, 16, bytes.fromhex(FETCH_V16_HINT)),
    *[(FetchResponse, v, _fetch(v).encode(v)) for v in (4, 11, 12, 16)],
    *[(ProduceRequest, v, _produce(v).encode(v)) for v in (3, 8, 9, 12)],
    *[(MetadataResponse, v, _metadata(v).encode(v)) for v in (1, 9, 12, 13)],
    (
        FetchRequest,
        17,
        FetchRequest(
            topics=[
                FetchRequest.FetchTopic(
                    topic_id=TID,
                    partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=5)],
                )
            ]
        ).encode(17),
    ),
    (
        ApiVersionsResponse,
        3,
        ApiVersionsResponse(
            api_keys=[ApiVersionsResponse.ApiVersion(api_key=0, min_version=3, max_version=12)],
            finalized_features_epoch=1,
        ).encode(3),
    ),
]

HOSTILE = [b"\x7f\xff\xff\xff", b"\x7f\xff", b"\xff\xff\xff\xff\x0f", b"\x80\x00\x00\x00", b"\xfe"]


def _mutations(data: bytes, rng: random.Random) -> list[bytes]:
    out = [data[:i] for i in range(len(data))]  # every truncation
    for _ in range(200):  # random bit flips, 1-3 per input
        buf = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        out.append(bytes(buf))
    for pattern in HOSTILE:  # hostile length prefixes at every offset
        for i in range(len(data)):
            out.append(data[:i] + pattern + data[i + len(pattern) :])
    return out


def _decode_only_decode_error(cls: type[Versioned], version: int, data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        cls.decode(data, version)


@pytest.mark.parametrize(("cls", "version", "seed"), SEEDS, ids=[f"{c.__name__}-v{v}" for c, v, _ in SEEDS])
def test_malformed_bodies_raise_only_decode_error(cls: type[Versioned], version: int, seed: bytes) -> None:
    assert cls.decode(seed, version).encode(version) == seed  # the seed itself is valid
    inputs = _mutations(seed, random.Random(f"{cls.__name__}{version}"))
    tracemalloc.start()
    try:
        for data in inputs:
            _decode_only_decode_error(cls, version, data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, f"decode allocated {peak} bytes on hostile input"


def test_fuzz_volume() -> None:
    total = sum(len(_mutations(seed, random.Random(0))) for _, _, seed in SEEDS)
    assert total >= 10_000


def test_random_garbage_frames() -> None:
    rng = random.Random(7)
    reader = FrameReader(max_frame_size=1 << 16)
    for _ in range(2000):
        blob = rng.randbytes(rng.randint(0, 40))
        for fn in (
            decode_request,
            lambda b: decode_response(b, FetchResponse, 16),
            lambda b: decode_response(b, MetadataResponse, 12),
        ):
            with contextlib.suppress(DecodeError):
                fn(blob)
        try:
            reader.feed(blob)
        except DecodeError:
            reader = FrameReader(max_frame_size=1 << 16)


def test_every_message_and_version_survives_garbage() -> None:
    """Cheap sweep over all generated (message, version) pairs, not only the hot ones."""
    from .test_roundtrip import CASES

    rng = random.Random(11)
    for cls, version in CASES:
        seed = cls().encode(version)
        inputs = [seed[:i] for i in range(len(seed))]
        inputs += [rng.randbytes(rng.randint(1, 48)) for _ in range(12)]
        inputs += [seed[:i] + b"\x7f\xff\xff\xff" + seed[i:] for i in range(len(seed))]
        for data in inputs:
            with contextlib.suppress(DecodeError):
                cls.decode(data, version)
