"""Producer and consumer round trips on the cluster's TLS and SASL listeners."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

import pytest

from tests.parity.flavour import Flavour
from tests.parity.harness import BASE_TS, Context, scenario

pytestmark = [pytest.mark.integration, pytest.mark.security_listeners]


async def round_trip(ctx: Context, listener: str, mechanism: str | None) -> None:
    t = await ctx.topic()
    tp = ctx.f.structs.TopicPartition(t, 0)
    security = ctx.security(listener, mechanism)
    p = ctx.producer(acks="all", enable_idempotence=False, **security)
    await ctx.step(f"producer start over {listener}", p.start())
    await ctx.step(
        "send_and_wait", p.send_and_wait(t, b"secret", key=b"k", partition=0, timestamp_ms=BASE_TS)
    )
    c = ctx.consumer(enable_auto_commit=False, auto_offset_reset="earliest", **security)
    await ctx.step(f"consumer start over {listener}", c.start())
    c.assign([tp])

    async def first() -> Any:
        async with asyncio.timeout(10):
            record = await c.getone()
        return (record.key, record.value, record.offset, record.timestamp)

    await ctx.step("getone", first())


@scenario
async def test_ssl_round_trip(f: Flavour, ctx: Context) -> None:
    await round_trip(ctx, "SSL", None)


@scenario
async def test_sasl_plaintext_plain_round_trip(f: Flavour, ctx: Context) -> None:
    await round_trip(ctx, "SASL_PLAINTEXT", "PLAIN")


@scenario
async def test_sasl_plaintext_scram_sha_512_round_trip(f: Flavour, ctx: Context) -> None:
    await round_trip(ctx, "SASL_PLAINTEXT", "SCRAM-SHA-512")


@scenario
async def test_sasl_ssl_scram_sha_256_round_trip(f: Flavour, ctx: Context) -> None:
    await round_trip(ctx, "SASL_SSL", "SCRAM-SHA-256")


@scenario
async def test_create_ssl_context_helper(f: Flavour, ctx: Context) -> None:
    """aiokafka.helpers.create_ssl_context(cafile=...) builds a context the clients take."""
    context = ctx.sync(
        "create_ssl_context(cafile)",
        lambda: type(f.helpers.create_ssl_context(cafile=str(ctx.cluster.ca_file))).__name__,
    )
    if context is None:
        return
    t = await ctx.topic()
    p = ctx.producer(
        acks=1,
        enable_idempotence=False,
        bootstrap_servers=ctx.cluster.bootstrap("SSL"),
        security_protocol="SSL",
        ssl_context=f.helpers.create_ssl_context(cafile=str(ctx.cluster.ca_file)),
    )
    await ctx.step("producer start", p.start())
    await ctx.step("send_and_wait", p.send_and_wait(t, b"v", partition=0, timestamp_ms=BASE_TS))


def unsigned_jwt(subject: str) -> str:
    """A token for Kafka's unsecured OAUTHBEARER validator (the session cluster's)."""

    def part(document: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(document).encode()).rstrip(b"=").decode()

    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + 3600})}."


@scenario
async def test_sasl_oauthbearer_round_trip(f: Flavour, ctx: Context) -> None:
    """aiokafka's token provider interface, with SASL extensions, on the SASL_PLAINTEXT listener."""

    class Tokens(f.abc.AbstractTokenProvider):  # type: ignore[misc,name-defined]
        async def token(self) -> str:
            return unsigned_jwt("alice")

        def extensions(self) -> dict[str, str]:
            return {"traceId": "abc"}

    t = await ctx.topic()
    security = {
        "bootstrap_servers": ctx.cluster.bootstrap("SASL_PLAINTEXT"),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauth_token_provider": Tokens(),
    }
    p = ctx.producer(acks="all", enable_idempotence=False, **security)
    await ctx.step("producer start", p.start())
    await ctx.step("send_and_wait", p.send_and_wait(t, b"token", partition=0, timestamp_ms=BASE_TS))
    c = ctx.consumer(enable_auto_commit=False, auto_offset_reset="earliest", **security)
    await ctx.step("consumer start", c.start())
    c.assign([ctx.f.structs.TopicPartition(t, 0)])

    async def first() -> Any:
        async with asyncio.timeout(10):
            record = await c.getone()
        return (record.value, record.offset)

    await ctx.step("getone", first())


@scenario
async def test_oauthbearer_without_a_provider(f: Flavour, ctx: Context) -> None:
    """aiokafka constructs the client and fails at start(); aiokafka_lead at construction."""
    ctx.sync(
        "producer without sasl_oauth_token_provider",
        lambda: ctx.producer(
            bootstrap_servers=ctx.cluster.bootstrap("SASL_PLAINTEXT"),
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
        ),
    )
