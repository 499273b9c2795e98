"""Shared helpers for real-cluster tests."""

from __future__ import annotations

import ssl
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aiokafka_lead.admin import AdminClient, NewTopic


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def tls_context(cluster: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cluster.ca_file))
    return context


@pytest.fixture
async def admin(kafka_cluster: Any) -> AsyncIterator[AdminClient]:
    async with AdminClient(bootstrap_servers=kafka_cluster.bootstrap()) as client:
        yield client


@pytest.fixture
async def topic3(admin: AdminClient) -> AsyncIterator[str]:
    """A fresh 3-partition, replication-factor-3 topic, deleted afterwards."""
    name = unique("t")
    await admin.create_topics([NewTopic(name, 3, 3)])
    yield name
    await admin.delete_topics([name])
