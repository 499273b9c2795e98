"""What a failed request says: the API, its version and the broker; a response cut in the
middle is not blamed on a SASL or TLS listener."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest

from aiokafka_lead.errors import DecodeError, KafkaConnectionError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.messages import MetadataRequest
from aiokafka_lead.testing.fake import Corrupt, FakeCluster, Truncate

METADATA = 3


@asynccontextmanager
async def connected(fc: FakeCluster) -> AsyncIterator[Connection]:
    host, port = fc.address(1)
    conn = Connection(host, port, ConnectionConfig(), node_id=1)
    async with anyio.create_task_group() as tg:
        await tg.start(conn.run)
        try:
            yield conn
        finally:
            await conn.close()


async def metadata_error(fault: Any) -> tuple[BaseException, int]:
    async with FakeCluster(brokers=1) as fc, connected(fc) as conn:
        fc.intercept(METADATA, lambda *_: fault, times=1)
        with anyio.fail_after(5), pytest.raises((DecodeError, KafkaConnectionError)) as info:
            await conn.send(MetadataRequest(topics=None))
        return info.value, fc.address(1)[1]


async def test_an_undecodable_answer_names_the_api_version_and_broker() -> None:
    error, port = await metadata_error(Corrupt())
    assert isinstance(error, DecodeError)
    assert str(error).startswith(f"Metadata v13 response from node 1 (127.0.0.1:{port}): ")


async def test_a_response_cut_in_the_middle_is_not_blamed_on_sasl_or_tls() -> None:
    error, _ = await metadata_error(Truncate(30))
    assert isinstance(error, KafkaConnectionError)
    assert str(error).startswith("Metadata v13 request to node 1 (127.0.0.1:")
    assert "in the middle of a response (30 bytes of it received)" in str(error)
    assert "SASL" not in str(error) and "TLS" not in str(error)


async def test_a_close_before_any_answer_is_not_blamed_on_sasl() -> None:
    """A proxy in front of a broker that is down accepts the connection and closes it at
    once: the error must not say a SASL listener did it (that one answers ApiVersions)."""

    async def close_at_once(conn: anyio.abc.SocketStream) -> None:
        await conn.receive()  # the ApiVersions request
        await conn.aclose()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, close_at_once)
        conn = Connection("127.0.0.1", port, ConnectionConfig(), node_id=2)
        with anyio.fail_after(5), pytest.raises(KafkaConnectionError) as info:
            await conn.run()
        tg.cancel_scope.cancel()
    message = str(info.value)
    assert "before answering ApiVersions, without a byte" in message
    assert "a proxy whose broker is down" in message and "SASL" not in message
