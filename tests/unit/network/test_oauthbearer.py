"""SASL/OAUTHBEARER step machine and token fetching (RFC 7628, KIP-342)."""

from __future__ import annotations

from typing import Any

import pytest

from aiokafka_lead.abc import AbstractTokenProvider
from aiokafka_lead.errors import SaslAuthenticationFailedError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.oauthbearer import OAuthBearerMechanism, fetch_token
from aiokafka_lead.network.sasl import SaslError

TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"


def test_client_first_message_with_extensions() -> None:
    mech = OAuthBearerMechanism(TOKEN, {"logicalCluster": "lkc-1", "traceId": "a b"})
    assert mech.initial_response() == (
        b"n,,\x01auth=Bearer " + TOKEN.encode() + b"\x01logicalCluster=lkc-1\x01traceId=a b\x01\x01"
    )
    assert mech.step(b"") is None
    assert mech.complete


def test_refusal_is_acknowledged_and_its_json_kept() -> None:
    mech = OAuthBearerMechanism(TOKEN)
    mech.initial_response()
    assert mech.step(b'{"status":"invalid_token"}') == b"\x01"
    assert not mech.complete
    assert mech.failure_detail() == ' (the broker\'s answer: {"status": "invalid_token"})'
    with pytest.raises(SaslError, match="invalid_token"):
        mech.step(b"")


def test_the_token_is_never_shown() -> None:
    mech = OAuthBearerMechanism(TOKEN, {"k": "v"})
    assert TOKEN not in repr(mech)
    with pytest.raises(SaslAuthenticationFailedError) as caught:
        OAuthBearerMechanism(TOKEN + "\x01auth=Bearer x")
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize(
    ("extensions", "message"),
    [({"auth": "x"}, "not allowed"), ({"bad-key": "x"}, "not allowed"), ({"k": "\x01"}, "printable")],
)
def test_bad_extensions_are_refused(extensions: dict[str, str], message: str) -> None:
    with pytest.raises(SaslAuthenticationFailedError, match=message):
        OAuthBearerMechanism(TOKEN, extensions)


class AsyncProvider(AbstractTokenProvider):
    async def token(self) -> str:
        return TOKEN


class SyncProvider:
    def token(self) -> str:
        return TOKEN

    def extensions(self) -> dict[str, str]:
        return {"a": "b"}


class Failing(AbstractTokenProvider):
    async def token(self) -> str:
        raise RuntimeError("identity provider unreachable")


class NotAString(AbstractTokenProvider):
    async def token(self) -> Any:
        return b"bytes"


async def test_async_and_sync_providers() -> None:
    assert await fetch_token(AsyncProvider()) == (TOKEN, {})
    assert await fetch_token(SyncProvider()) == (TOKEN, {"a": "b"})


async def test_a_failing_provider_is_named() -> None:
    with pytest.raises(SaslAuthenticationFailedError, match="provider Failing failed: identity provider"):
        await fetch_token(Failing())
    with pytest.raises(SaslAuthenticationFailedError, match="must return a str, not bytes"):
        await fetch_token(NotAString())


def test_connection_config_shows_no_secret() -> None:
    config = ConnectionConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=AsyncProvider(),
        sasl_plain_password="p4ssw0rd",
    )
    assert "p4ssw0rd" not in repr(config) and "AsyncProvider" not in repr(config)
