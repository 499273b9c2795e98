"""The schema walk finds where every message ends without decoding it, and a Metadata answer
decoded for some topics equals the full decode with the others left out."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.metadata.decode import (
    decode_metadata,
    iter_decode_metadata,
    metadata_decoder,
    topics_from_response,
)
from aiokafka_lead.protocol.framing import encode_response
from aiokafka_lead.protocol.messages import RESPONSE_CLASSES, MetadataResponse, Versioned
from aiokafka_lead.protocol.skim import struct_end
from aiokafka_lead.slices import run_to_end

from .strategies import struct_strategy

CASES = [
    (cls, v) for cls in RESPONSE_CLASSES.values() for v in range(cls.MIN_VERSION, cls.LATEST_VERSION + 1)
]
SETTINGS = settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
def test_struct_end_is_the_end_of_the_encoding(cls: type[Versioned], version: int) -> None:
    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        body = data.draw(struct_strategy(cls, version)).encode(version)
        assert struct_end(cls, memoryview(body), 0, version, cls.is_flexible(version)) == len(body)
        if body:
            with pytest.raises(DecodeError):
                struct_end(cls, memoryview(body[:-1]), 0, version, cls.is_flexible(version))

    check()


def answer(names: list[str | None]) -> MetadataResponse:
    partition = MetadataResponse.MetadataResponsePartition
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092, rack="r")],
        cluster_id="c",
        controller_id=1,
        topics=[
            MetadataResponse.MetadataResponseTopic(
                name=name,
                partitions=[
                    partition(partition_index=i, leader_id=1, replica_nodes=[1], isr_nodes=[1])
                    for i in range(i)
                ],
            )
            for i, name in enumerate(names)
        ],
    )


@pytest.mark.parametrize("version", range(MetadataResponse.MIN_VERSION, MetadataResponse.LATEST_VERSION + 1))
def test_metadata_decoded_for_some_topics(version: int) -> None:
    names: list[str | None] = ["a", "b", "c", "a-long-name" * 20]
    if version >= 12:
        names.append(None)  # a topic asked for by id and unknown
    full = answer(names)
    frame = memoryview(encode_response(full, version, 7))[4:]
    kept = metadata_decoder(version, {"b", "a-long-name" * 20, "absent"})(frame)
    every = metadata_decoder(version, None)(frame)
    assert [t.name for t in every.topics] == names
    assert [t.name for t in kept.topics] == ["b", "a-long-name" * 20]
    assert kept.topics == [every.topics[1], every.topics[3]]
    assert (kept.brokers, kept.cluster_id, kept.controller_id) == (
        every.brokers,
        every.cluster_id,
        every.controller_id,
    )
    assert metadata_decoder(version, set())(frame).topics == []


@pytest.mark.parametrize("version", [1, 9, 12, 13])
async def test_the_cooperative_metadata_decode_gives_the_same_answer(version: int) -> None:
    names: list[str | None] = [f"t{i}" for i in range(50)]
    frame = memoryview(encode_response(answer(names), version, 7))[4:]
    for wanted in ({"t3", "t49", "absent"}, None):
        decoded = await decode_metadata(frame, version, wanted)
        reference = metadata_decoder(version, wanted)(frame)
        assert decoded.topics == tuple(topics_from_response(reference))
        assert [t.name for t in decoded.topics] == (["t3", "t49"] if wanted else names)
        rest = decoded.response
        assert (rest.brokers, rest.cluster_id, rest.controller_id) == (
            reference.brokers,
            reference.cluster_id,
            reference.controller_id,
        )


@pytest.mark.parametrize("version", range(MetadataResponse.MIN_VERSION, MetadataResponse.LATEST_VERSION + 1))
def test_partitions_read_as_rows_equal_the_generated_decode(version: int) -> None:
    """Any answer the schema allows (tagged fields, empty and long node lists, every
    version): the rows read by schema are what the generated decoder gives."""

    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        response = data.draw(struct_strategy(MetadataResponse, version))
        frame = memoryview(encode_response(response, version, 7))[4:]
        decoded = run_to_end(iter_decode_metadata(frame, version, None))
        reference = metadata_decoder(version, None)(frame)
        assert decoded.topics == tuple(topics_from_response(reference))
        assert decoded.response.brokers == reference.brokers
        if decoded.topics:
            with pytest.raises(DecodeError):
                run_to_end(iter_decode_metadata(frame[:-1], version, None))

    check()


def _one_topic_answer(partitions: int, version: int = 12) -> memoryview:
    part = MetadataResponse.MetadataResponsePartition
    body = MetadataResponse(
        topics=[
            MetadataResponse.MetadataResponseTopic(
                name="t",
                partitions=[part(partition_index=p, leader_id=1, leader_epoch=0) for p in range(partitions)],
            )
        ],
    ).encode(version)
    return memoryview(body)


def test_the_walk_yields_within_one_topic_of_many_partitions() -> None:
    """One topic of a million partitions is one item of the topics array: the walk must give
    its caller chances to yield inside it, not only between topics."""
    from aiokafka_lead.protocol.skim import YIELD_EVERY

    partitions = 4 * YIELD_EVERY + 3
    frame = b"\x00\x00\x00\x07\x00" + bytes(_one_topic_answer(partitions))
    for wanted in ({"t"}, {"other"}):  # read, and skipped
        walk = iter_decode_metadata(frame, 12, wanted)
        yields = 0
        while True:
            try:
                next(walk)
            except StopIteration as done:
                decoded = done.value
                break
            yields += 1
        assert yields >= 4  # the old walk yielded once: after the topic
        assert len(decoded.topics) == (1 if wanted == {"t"} else 0)
