"""Unreachable, silent or malformed bootstrap servers: a clear error within the
configured timeout, nothing left running, exit code 1 from the ``aiokafka-lead`` command."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import pytest

from aiokafka_lead import AIOKafkaAdminClient, AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.cli import main
from aiokafka_lead.errors import KafkaConnectionError, KafkaTimeoutError


@asynccontextmanager
async def silent_server() -> AsyncIterator[str]:
    """Accepts connections and never answers (a hung broker, a firewall that lets SYN through)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def hold(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, hold)
        yield f"127.0.0.1:{port}"
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("client", [AIOKafkaProducer, AIOKafkaConsumer, AIOKafkaAdminClient])
async def test_a_silent_broker_fails_start_within_request_timeout(client: type) -> None:
    async with silent_server() as bootstrap:
        made = client(bootstrap_servers=bootstrap, request_timeout_ms=500)
        started = time.monotonic()
        with (
            anyio.fail_after(5),
            pytest.raises(KafkaTimeoutError, match=r"no metadata from .* within 500 ms"),
        ):
            await made.start()
        assert time.monotonic() - started < 2.0
        assert made._core._pool is None and not made._core.host.running  # nothing left running
        await (made.close() if client is AIOKafkaAdminClient else made.stop())


async def test_an_unreachable_broker_fails_start_at_once() -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers="127.0.0.1:1", request_timeout_ms=5000)
    started = time.monotonic()
    with (
        anyio.fail_after(5),
        pytest.raises(KafkaConnectionError, match=r"unable to bootstrap from 127\.0\.0\.1:1"),
    ):
        await admin.start()
    assert time.monotonic() - started < 2.0
    await admin.close()


@pytest.mark.parametrize("bootstrap", ["127.0.0.1:1", "host:notaport", "", "[::1"])
def test_the_command_exits_1_with_the_reason(bootstrap: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "list", "--bootstrap-server", bootstrap]) == 1
    err = capsys.readouterr().err
    assert err.startswith("aiokafka-lead: Kafka")  # KafkaConnectionError / KafkaConfigurationError
    assert "bootstrap" in err
