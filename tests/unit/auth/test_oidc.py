"""OIDCTokenProvider against the test OIDC server (no broker): caching, refresh, retries."""

from __future__ import annotations

import time

import anyio
import pytest

from aiokafka_lead.auth.oidc import OIDCTokenProvider, TokenEndpointError
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
