"""OIDCTokenProvider against the test OIDC server (no broker): caching, refresh, retries."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from aiokafka_lead.auth.oidc import JWTBearerTokenProvider, OIDCTokenProvider, TokenEndpointError
from aiokafka_lead.testing.oidc import running_oidc_server
from tests.support.waiting import eventually


async def test_token_is_cached_and_refreshed_at_80_percent() -> None:
    # the JWT's exp is in whole seconds: the token lives between 2 and 3 s
    with running_oidc_server(clients={"c": "s"}, lifetime_s=3) as server:
        provider = OIDCTokenProvider(server.token_url, "c", "s", scope="kafka")
        first = await provider.token()
        started = time.monotonic()
        assert await provider.token() == first and server.issued == 1

        async def refreshed() -> bool:
            return (await provider.token()) != first

        with anyio.fail_after(5):
            await eventually(refreshed, interval=0.05)
        assert time.monotonic() - started > 1.5  # 80% of at least 2 s, not before
        assert server.issued == 2


async def test_a_failed_refresh_keeps_the_valid_token() -> None:
    with running_oidc_server(clients={"c": "s"}, lifetime_s=30) as server:
        provider = OIDCTokenProvider(server.token_url, "c", "s", retries=0, refresh_ratio=0.1)
        first = await provider.token()
        provider._refresh_at = 0.0  # due for a refresh, still valid for 30 s
        server.fail_next(1, 500)
        assert await provider.token() == first
        assert server.requests == 2 and server.issued == 1
        assert await provider.token() != first  # the next call refreshes
        assert server.issued == 2


async def test_retries_then_a_clear_error_without_the_secret() -> None:
    with running_oidc_server(clients={"c": "s3cr3t"}) as server:
        provider = OIDCTokenProvider(server.token_url, "c", "s3cr3t", retries=2, retry_backoff_ms=10)
        server.fail_next(3, 502)
        expected = r"client_id 'c'\): no token after 3 attempts: HTTP 502"
        with pytest.raises(TokenEndpointError, match=expected) as e:
            await provider.token()
        assert "s3cr3t" not in str(e.value) and "s3cr3t" not in repr(provider)
        assert server.requests == 3
        assert await provider.token()  # the endpoint is back


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="http"):
        OIDCTokenProvider("ftp://x/token", "c", "s")
    with pytest.raises(ValueError, match="client_secret"):
        OIDCTokenProvider("https://x/token", "c", "")


async def test_jwt_bearer_grant_with_an_assertion_file(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with running_oidc_server(clients={}) as server:
        server.trust_assertion_key("svc-billing", key.public_key())
        assertion_file = tmp_path / "assertion.jwt"
        assertion_file.write_text(server.assertion_for("svc-billing", key) + "\n")
        provider = JWTBearerTokenProvider(server.token_url, assertion_file=assertion_file, scope="kafka")
        token = await provider.token()
        assert jwt.decode(token, options={"verify_signature": False})["sub"] == "svc-billing"
        # an assertion signed by another key is refused at once, with the endpoint's reason
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        forged = JWTBearerTokenProvider(
            server.token_url, assertion=lambda: server.assertion_for("svc-billing", other)
        )
        refused = r"HTTP 400 \(invalid_grant: Signature verification failed"
        with pytest.raises(TokenEndpointError, match=refused):
            await forged.token()
        missing = JWTBearerTokenProvider(server.token_url, assertion_file=tmp_path / "nope.jwt")
        with pytest.raises(TokenEndpointError, match="cannot read the assertion file"):
            await missing.token()
    with pytest.raises(ValueError, match="one of assertion_file and assertion"):
        JWTBearerTokenProvider("https://idp/token")


async def test_an_endpoint_told_to_fail_for_long_holds_a_count_not_a_list() -> None:
    """The soak takes the endpoint down with ``fail_next(1_000_000, 503)``: that must not
    allocate per failure to come (8 MB in the soak's own process, seen as client RSS)."""
    import tracemalloc

    with running_oidc_server(clients={"c": "s"}) as server:
        provider = OIDCTokenProvider(server.token_url, "c", "s", retries=0)
        tracemalloc.start()
        try:
            server.fail_next(10_000_000, 503)
            grown = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert grown < 1 << 20
        with pytest.raises(TokenEndpointError, match="HTTP 503"):
            await provider.token()
        server.fail_next(0, 503)
        assert await provider.token()
        assert server.requests == 2
