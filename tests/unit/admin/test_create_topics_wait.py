"""create_topics() waits until every broker's metadata shows the new topics: the Metadata
answers it reads on the way may be strange, and none of them breaks the wait."""

from __future__ import annotations

import copy
from typing import Any

from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.testing.fake import Rewrite
from tests.support.admin_broker import admin_broker
from tests.unit.hostile.harness import REQUEST_TIMEOUT_MS, case_rules

METADATA = 3


def with_a_stranger(response: Any, _frame: bytes) -> Any:
    """The answer names one more topic, which nobody asked for."""
    if response.topics:
        stranger = copy.copy(response.topics[0])
        stranger.name = "stranger"
        response.topics = [*response.topics, stranger]
    return response


async def test_a_metadata_answer_naming_a_topic_not_asked_for_does_not_break_the_wait() -> None:
    async with case_rules(), admin_broker() as broker:
        broker.lie(METADATA, Rewrite(with_a_stranger), None)
        async with AdminClient(
            bootstrap_servers=f"127.0.0.1:{broker.port}", request_timeout_ms=REQUEST_TIMEOUT_MS
        ) as admin:
            await admin.create_topics([NewTopic("n1", 2, 1)], timeout_ms=2 * REQUEST_TIMEOUT_MS)
            assert broker.topics["n1"] == 2
            assert "n1" in await admin.list_topics()
