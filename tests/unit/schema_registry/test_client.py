"""The registry client against the in-memory registry: every kind of answer is a clear error,
5xx are retried until the deadline, caches spare round trips; evolution is checked."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import AsyncSchemaRegistryClient
from confluent_kafka.schema_registry import Schema as TheirSchema
from confluent_kafka.schema_registry import SchemaRegistryError as TheirError

from aiokafka_lead.schema_registry import (
    AuthenticationError,
    IncompatibleSchemaError,
    InvalidSchemaError,
    NotFoundError,
    RegistryUnavailableError,
    Schema,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from aiokafka_lead.schema_registry.avro import AvroSerializer
from aiokafka_lead.testing.cluster.security import generate_tls
from aiokafka_lead.testing.schema_registry import SchemaRegistryServer
from tests.support.schema_types import AVRO_USER

USER_V2 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "people",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "age", "type": "long"},
            {"name": "email", "type": ["null", "string"], "default": None},
        ],
    }
)
USER_BAD = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "people",
        "fields": [{"name": "name", "type": "string"}, {"name": "country", "type": "string"}],
    }
)


@pytest.fixture
def server() -> Iterator[SchemaRegistryServer]:
    with SchemaRegistryServer() as registry:
        yield registry


def client(server: SchemaRegistryServer, **options: object) -> SchemaRegistryClient:
    return SchemaRegistryClient(server.url, retry_backoff_ms=10, retry_backoff_max_ms=50, **options)  # type: ignore[arg-type]


async def test_register_lookup_and_caches(server: SchemaRegistryServer) -> None:
    registry = client(server)
    registered = await registry.register_schema("users-value", Schema(AVRO_USER))
    assert (registered.schema_id, registered.version, registered.guid is not None) == (1, 1, True)
    before = server.requests
    assert await registry.register_schema("users-value", Schema(AVRO_USER)) == registered
    assert (await registry.get_schema(registered.schema_id)).schema_str == AVRO_USER
    assert server.requests == before  # both answered from the caches
    assert (await registry.lookup_schema("users-value", Schema(AVRO_USER))).schema_id == 1
    assert await registry.get_subjects() == ["users-value"]
    assert await registry.get_versions("users-value") == [1]
    assert (await registry.get_schema_by_guid(registered.guid)).schema_str == AVRO_USER  # type: ignore[arg-type]


async def test_delete_soft_then_permanent(server: SchemaRegistryServer) -> None:
    registry = client(server)
    registered = await registry.register_schema("gone-value", Schema(AVRO_USER))
    assert await registry.delete_subject("gone-value", permanent=True) == [1]
    assert await registry.get_subjects() == []
    with pytest.raises(NotFoundError, match="Subject 'gone-value' not found"):
        await registry.delete_subject("gone-value")
    # a schema id stays readable (records written with it must still decode)
    assert (await client(server).get_schema(registered.schema_id)).schema_str == AVRO_USER


async def test_not_found_answers_name_what_is_missing(server: SchemaRegistryServer) -> None:
    registry = client(server)
    with pytest.raises(NotFoundError, match="Subject 'nobody-value' not found") as info:
        await registry.get_latest_version("nobody-value")
    assert (info.value.status, info.value.error_code) == (404, 40401)
    with pytest.raises(NotFoundError, match="Schema 99 not found") as info:
        await registry.get_schema(99)
    assert info.value.error_code == 40403
    await registry.register_schema("users-value", Schema(AVRO_USER))
    with pytest.raises(NotFoundError, match="Version 7 not found"):
        await registry.get_version("users-value", 7)
    serializer = AvroSerializer(registry, USER_V2, auto_register_schemas=False)
    with pytest.raises(NotFoundError, match="Schema not found"):
        await serializer({"name": "x", "age": 1, "email": None}, "users")


async def test_invalid_schema_is_422_with_the_registry_reason(server: SchemaRegistryServer) -> None:
    registry = client(server)
    with pytest.raises(InvalidSchemaError, match="Invalid schema") as info:
        await registry.register_schema(
            "x-value", Schema('{"type": "record", "name": "R", "fields": [{"name": 1}]}')
        )
    assert (info.value.status, info.value.error_code) == (422, 42201)
    with pytest.raises(InvalidSchemaError, match="Invalid compatibility level"):
        await registry.set_compatibility("SOMETIMES")


async def test_evolution_compatible_registered_incompatible_refused(server: SchemaRegistryServer) -> None:
    ours = client(server)
    first = await ours.register_schema("users-value", Schema(AVRO_USER))
    assert await ours.test_compatibility("users-value", Schema(USER_V2))
    second = await ours.register_schema("users-value", Schema(USER_V2))
    assert (second.version, second.schema_id) == (2, first.schema_id + 1)
    assert not await ours.test_compatibility("users-value", Schema(USER_BAD))
    with pytest.raises(IncompatibleSchemaError) as info:
        await ours.register_schema("users-value", Schema(USER_BAD))
    assert info.value.status == info.value.error_code == 409
    assert "incompatible with an earlier schema" in info.value.message
    assert "'country' has no default value" in info.value.message
    # confluent-kafka's client is refused with the same message
    theirs = AsyncSchemaRegistryClient({"url": server.url})
    with pytest.raises(TheirError) as their_info:
        await theirs.register_schema("users-value", TheirSchema(USER_BAD, "AVRO"))
    assert their_info.value.http_status_code == 409
    assert their_info.value.error_message == info.value.message
    # with the rule off, the same schema is accepted
    assert await ours.set_compatibility("NONE", "users-value") == "NONE"
    assert (await ours.register_schema("users-value", Schema(USER_BAD))).version == 3


async def test_credentials_refused_is_401() -> None:
    with SchemaRegistryServer(basic_auth=("key", "secret")) as server:
        with pytest.raises(AuthenticationError, match="Unauthorized") as info:
            await client(server).get_subjects()
        assert info.value.status == 401
        with pytest.raises(AuthenticationError):
            await client(server, basic_auth=("key", "wrong")).get_subjects()
        assert await client(server, basic_auth=("key", "secret")).get_subjects() == []
        in_url = server.url.replace("http://", "http://key:s%40cret@")
        server.basic_auth = ("key", "s@cret")
        registry = SchemaRegistryClient(in_url)
        assert await registry.get_subjects() == []
        assert registry.url == server.url  # the credentials stay out of what errors show
        with pytest.raises(ValueError, match="carries credentials"):
            SchemaRegistryClient(in_url, basic_auth=("a", "b"))


async def test_bearer_token_from_an_async_callable(server: SchemaRegistryServer) -> None:
    asked = []

    async def token() -> str:
        asked.append(1)
        return "t0ken"

    assert await client(server, bearer_token=token).get_subjects() == []
    assert asked == [1]
    with pytest.raises(ValueError, match="not both"):
        SchemaRegistryClient(server.url, basic_auth=("a", "b"), bearer_token="x")


async def test_5xx_is_retried_with_backoff(server: SchemaRegistryServer) -> None:
    server.fail_next(3, 503)
    before = server.requests
    assert await client(server).get_subjects() == []
    assert server.requests - before == 4


async def test_5xx_until_the_deadline_gives_up_naming_the_cause(server: SchemaRegistryServer) -> None:
    server.fail_next(10_000, 500)
    started = time.monotonic()
    with pytest.raises(
        RegistryUnavailableError, match=r"gave up after \d+ attempts in 0.5s; last: .*500"
    ) as info:
        await client(server, request_timeout_ms=500).get_subjects()
    assert time.monotonic() - started < 5
    assert info.value.status is None


async def test_an_unreachable_registry_gives_up_at_the_deadline() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed when the block ends: nobody listens there
    registry = SchemaRegistryClient(f"http://127.0.0.1:{port}", request_timeout_ms=300, retry_backoff_ms=10)
    with pytest.raises(RegistryUnavailableError, match="no answer: ConnectionRefusedError"):
        await registry.get_schema(1)


def test_bad_urls_are_refused_at_construction() -> None:
    for url in ["localhost:8081", "ftp://registry", "http://"]:
        with pytest.raises(ValueError, match="expected http://host"):
            SchemaRegistryClient(url)


async def test_tls_with_a_private_ca(tmp_path: Path) -> None:
    files = generate_tls(tmp_path)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(files.server_keystore)
    with SchemaRegistryServer(ssl_context=server_side) as server:
        assert server.url.startswith("https://127.0.0.1:")
        trusted = ssl.create_default_context(cafile=str(files.ca_cert))
        assert await SchemaRegistryClient(server.url, ssl_context=trusted).get_subjects() == []
        started = time.monotonic()
        with pytest.raises(
            SchemaRegistryError, match=r"TLS certificate is refused.*CERTIFICATE_VERIFY_FAILED"
        ):
            await SchemaRegistryClient(server.url).get_subjects()  # the system's CAs: not retried
        assert time.monotonic() - started < 10


async def _serve_once(answer: bytes) -> tuple[asyncio.Server, int]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        for at in range(0, len(answer), 7):  # in pieces: the client must wait for the rest
            writer.write(answer[at : at + 7])
            await writer.drain()
            await asyncio.sleep(0.001)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'4\r\n["a"\r\n5\r\n, "b"\r\n1\r\n]\r\n0\r\n\r\n',
        b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n["a", "b"]',  # read to the close
        b'HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\n["a", "b"]',
    ],
)
async def test_http_answers_of_every_framing(answer: bytes) -> None:
    server, port = await _serve_once(answer)
    async with server:
        assert await SchemaRegistryClient(f"http://127.0.0.1:{port}").get_subjects() == ["a", "b"]


async def test_a_failure_stays_named_when_the_deadline_cuts_the_next_attempt() -> None:
    """The first attempt gets a garbled answer, the second none at all: the error names the
    garbled answer, not only the deadline."""
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await reader.readuntil(b"\r\n\r\n")
        if connections == 1:
            writer.write(b"SMTP ready\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        await asyncio.sleep(5)  # no answer: the deadline cuts this attempt
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        client = SchemaRegistryClient(f"http://127.0.0.1:{port}", request_timeout_ms=500, retry_backoff_ms=10)
        with pytest.raises(RegistryUnavailableError, match=r"not an HTTP answer.*cut by the deadline"):
            await client.get_subjects()
    assert connections >= 2


async def test_a_garbled_answer_is_retried_then_named() -> None:
    server, port = await _serve_once(b"SMTP ready\r\n\r\n")
    async with server:
        client = SchemaRegistryClient(f"http://127.0.0.1:{port}", request_timeout_ms=300, retry_backoff_ms=10)
        with pytest.raises(RegistryUnavailableError, match="not an HTTP answer"):
            await client.get_subjects()
