"""AIOKafkaAdminClient's aiokafka-shaped results (the real-cluster comparison with aiokafka
itself is tests/parity/test_admin.py)."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, AIOKafkaAdminClient
from aiokafka_lead.admin.responses import CreateTopicsResponse, DescribeConfigsResponse, TopicError
from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.fake.util import DEADLINE


async def test_describe_topics_gives_dicts_and_an_unknown_topic_its_error_code() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=2, leaders=[2, 3])
            async with AIOKafkaAdminClient(bootstrap_servers=fc.bootstrap) as admin:
                [topic] = await admin.describe_topics(["t"])
                [missing] = await admin.describe_topics(["missing"])
                coordinator = await admin.find_coordinator("g")
                assert "missing" not in await admin.list_topics()  # asking created nothing
    assert sorted(topic) == ["error_code", "is_internal", "partitions", "topic"]
    assert (topic["error_code"], topic["topic"], topic["is_internal"]) == (0, "t", False)
    assert [(p["partition"], p["leader"], p["error_code"]) for p in topic["partitions"]] == [
        (0, 2, 0),
        (1, 3, 0),
    ]
    assert sorted(topic["partitions"][0]) == [
        "error_code",
        "isr",
        "leader",
        "offline_replicas",
        "partition",
        "replicas",
    ]
    assert missing == {"error_code": 3, "topic": "missing", "is_internal": False, "partitions": []}
    assert coordinator in (1, 2, 3)


async def test_constructor_keywords_as_aiokafkas() -> None:
    loop = asyncio.get_running_loop()
    with pytest.warns(DeprecationWarning, match="api_version"):
        AIOKafkaAdminClient(bootstrap_servers="127.0.0.1:9092", api_version="2.8")
    AIOKafkaAdminClient(bootstrap_servers="127.0.0.1:9092", loop=loop)  # accepted, as aiokafka's
    with pytest.raises(TypeError, match="no_such_option"):
        AIOKafkaAdminClient(bootstrap_servers="127.0.0.1:9092", no_such_option=1)
    with pytest.raises(TypeError, match="loop"):
        AdminClient(bootstrap_servers="127.0.0.1:9092", loop=loop)  # the typed client has no loop=


def test_responses_unpack_index_and_convert_like_aiokafkas() -> None:
    response = CreateTopicsResponse(0, [TopicError("t", 36, "Topic 't' already exists.")])
    topic, error_code, error_message = response.topic_errors[0]
    assert (topic, error_code, response.topic_errors[0][2]) == ("t", 36, error_message)
    assert response.topic_errors[0].error_code == E.TOPIC_ALREADY_EXISTS
    assert response.topic_errors == [("t", 36, "Topic 't' already exists.")]
    assert response.to_object() == {
        "throttle_time_ms": 0,
        "topic_errors": [{"topic": "t", "error_code": 36, "error_message": "Topic 't' already exists."}],
    }
    assert response == CreateTopicsResponse(0, [("t", 36, "Topic 't' already exists.")])
    assert repr(response).startswith("CreateTopicsResponse(throttle_time_ms=0, topic_errors=")
    with pytest.raises(TypeError, match="takes 2 values"):
        DescribeConfigsResponse(0)
