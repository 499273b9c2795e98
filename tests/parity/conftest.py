"""Fixtures of the differential suite: the session's 3-node cluster, the neutral set-up."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from aiokafka_lead.admin import AdminClient


async def _delete_topics(bootstrap: str, names: list[str]) -> None:
    async with asyncio.timeout(60), AdminClient(bootstrap_servers=bootstrap) as admin:
        existing = set(await admin.list_topics())
        gone = [n for n in names if n in existing]
        if gone:
            await admin.delete_topics(gone, timeout_ms=30_000)


@pytest.fixture(scope="session")
def parity_created_topics(kafka_cluster: Any) -> Iterator[list[str]]:
    """Every topic the suite created, deleted in one request when the session ends."""
    created: list[str] = []
    yield created
    if created:
        asyncio.run(_delete_topics(kafka_cluster.bootstrap(), created))
