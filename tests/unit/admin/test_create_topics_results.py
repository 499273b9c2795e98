"""create_topics() checks the controller's per-topic results: a topic the answer does not
name, or one no broker ever shows, is an error, never a success with a WARNING."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AIOKafkaAdminClient, NewTopic
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaProtocolError, KafkaTimeoutError
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    MetadataRequest,
    MetadataResponse,
)
from tests.support.script_server import ScriptServer, script_server


class Controller:
    """One broker that is also the controller; ``answer_for`` names the topic its
    CreateTopics answer reports, ``visible`` whether Metadata then shows it."""

    def __init__(self, answer_for: str | None, visible: bool) -> None:
        self.answer_for = answer_for
        self.visible = visible
        self.created: set[str] = set()
        self.server: ScriptServer | None = None

    async def handle(self, header: RequestHeader, request: Any) -> Any:
        assert self.server is not None
        if isinstance(request, CreateTopicsRequest):
            self.created.update(t.name for t in request.topics)
            result = CreateTopicsResponse.CreatableTopicResult
            return CreateTopicsResponse(
                topics=[result(name=self.answer_for or t.name) for t in request.topics]
            )
        assert isinstance(request, MetadataRequest)
        names = [t.name for t in request.topics] if request.topics is not None else sorted(self.created)
        broker = MetadataResponse.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=self.server.port)
        return MetadataResponse(
            brokers=[broker],
            cluster_id="c",
            controller_id=1,
            topics=[self._topic(name) for name in names],
        )

    def _topic(self, name: str | None) -> MetadataResponse.MetadataResponseTopic:
        if name in self.created and self.visible:
            partition = MetadataResponse.MetadataResponsePartition(partition_index=0, leader_id=1)
            return MetadataResponse.MetadataResponseTopic(name=name, partitions=[partition])
        unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return MetadataResponse.MetadataResponseTopic(name=name, error_code=unknown)


async def create(controller: Controller, timeout_ms: int) -> None:
    async with script_server(controller.handle) as server:
        controller.server = server
        async with AIOKafkaAdminClient(bootstrap_servers=f"127.0.0.1:{server.port}") as admin:
            await admin.create_topics([NewTopic("t", 1, 1)], timeout_ms=timeout_ms)


async def test_a_created_topic_that_shows_up_is_a_success() -> None:
    with anyio.fail_after(10):
        await create(Controller(answer_for=None, visible=True), timeout_ms=2000)


async def test_an_answer_naming_another_topic_is_an_error_at_once() -> None:
    started = time.monotonic()
    with anyio.fail_after(10), pytest.raises(KafkaProtocolError) as info:
        await create(Controller(answer_for="other", visible=True), timeout_ms=5000)
    assert "no result for topic(s) ['t']" in str(info.value) and "'other'" in str(info.value)
    assert time.monotonic() - started < 2.5  # not after the 5 s timeout


async def test_a_topic_that_never_appears_is_a_timeout_error() -> None:
    with anyio.fail_after(10), pytest.raises(KafkaTimeoutError, match=r"\['t'\] created, but"):
        await create(Controller(answer_for=None, visible=False), timeout_ms=500)
