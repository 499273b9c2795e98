"""OIDC client credentials (KIP-768's ``sasl.oauthbearer.method=oidc``): a token provider.

``OIDCTokenProvider(token_endpoint_url, client_id, client_secret, scope=...)`` posts an
OAuth 2 client-credentials grant (RFC 6749 4.4: ``grant_type=client_credentials``, the
client authenticated with HTTP Basic, as Kafka's Java client does) and caches the access
token until 80% of its lifetime (``expires_in``, else the JWT's ``exp``) has passed; then the
next ``token()`` fetches a new one. Transient failures (no answer, 5xx, 408, 429) are retried
with exponential backoff, and when they last, the error is retriable
(``TokenEndpointUnavailableError``: the connection that needed the token is tried again
within its caller's deadline); a refusal (400, 401, 403, ...) is not retried, as in Java. While a
refresh fails, the cached token is used until it expires. Errors name the endpoint, the
client id, the HTTP status and the endpoint's ``error`` / ``error_description``; the
secret and the tokens are never shown.

HTTP is the standard library's (``urllib``) in a worker thread: no extra dependency.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from http import HTTPStatus
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from aiokafka_lead.abc import AbstractTokenProvider
from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.errors import KafkaConnectionError, KafkaError

log = logging.getLogger(__name__)

#: statuses worth another try (the endpoint is busy or failing, not refusing us)
RETRIABLE_STATUSES = frozenset({
    HTTPStatus.REQUEST_TIMEOUT,
    HTTPStatus.TOO_MANY_REQUESTS,
    HTTPStatus.INTERNAL_SERVER_ERROR,
    HTTPStatus.BAD_GATEWAY,
    HTTPStatus.SERVICE_UNAVAILABLE,
    HTTPStatus.GATEWAY_TIMEOUT,
})


class TokenEndpointError(KafkaError):
    """The token endpoint did not give a token (after retries where a retry could help)."""


class TokenEndpointUnavailableError(TokenEndpointError, KafkaConnectionError):
    """The token endpoint could not be reached or kept failing (no answer, 5xx, 408, 429),
    even after retries. Retriable: a connection that needs a token is tried again with the
    reconnect backoff, within the deadline of whatever waits for it (a delivery, a request),
    like a broker that cannot be reached."""


class OIDCTokenProvider(AbstractTokenProvider):
    """Access tokens from an OAuth 2 / OIDC token endpoint by the client-credentials grant.

    ``scope``: space-separated scopes (Java's ``sasl.oauthbearer.scope``); ``audience``:
    the ``audience`` form parameter some providers (Auth0, Okta) want; ``extensions``: the
    SASL extensions to send (KIP-342; e.g. Confluent Cloud's ``logicalCluster`` and
    ``identityPoolId``); ``refresh_ratio``: the part of a token's lifetime after which it is
    replaced; ``retries``: further attempts after a transient failure, ``retry_backoff_ms``
    / ``retry_backoff_max_ms`` the waits between them; ``timeout_ms`` per HTTP request;
    ``ssl_context`` for an ``https`` endpoint with a private CA.
    """

    def __init__(
        self,
        token_endpoint_url: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str | None = None,
        audience: str | None = None,
        extensions: Mapping[str, str] | None = None,
        refresh_ratio: float = 0.8,
        retries: int = 3,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 10_000,
        timeout_ms: int = 10_000,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(token_endpoint_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"token_endpoint_url must be an http(s) URL, not {token_endpoint_url!r}")
        self._check_credentials(client_id, client_secret)
        if not 0.1 <= refresh_ratio <= 1.0:
            raise ValueError(f"refresh_ratio must be between 0.1 and 1.0, not {refresh_ratio!r}")
        if retries < 0 or timeout_ms <= 0:
            raise ValueError("retries must be >= 0 and timeout_ms > 0")
        self.token_endpoint_url = token_endpoint_url
        self.client_id = client_id
        self._secret = client_secret
        self._scope = scope
        self._audience = audience
        self._extensions = dict(extensions or {})
        self._refresh_ratio = refresh_ratio
        self._retries = retries
        self._backoff = ExponentialBackoff(retry_backoff_ms, max(retry_backoff_max_ms, retry_backoff_ms))
        self._timeout_s = timeout_ms / 1000
        self._ssl_context = ssl_context
        self._token: str | None = None
        self._refresh_at = 0.0  # monotonic
        self._expires_at = 0.0  # monotonic
        self._lock = anyio.Lock()
        #: tokens fetched so far (for metrics and tests)
        self.fetches = 0

    def _check_credentials(self, client_id: str, client_secret: str) -> None:
        if not client_id or not client_secret:
            raise ValueError("OIDCTokenProvider needs a client_id and a client_secret")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.token_endpoint_url} client_id={self.client_id!r}>"

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)

    async def token(self) -> str:
        """The cached token while it is fresh; otherwise a new one from the endpoint."""
        async with self._lock:
            now = time.monotonic()
            if self._token is not None and now < self._refresh_at:
                return self._token
            try:
                token, lifetime_s = await self._fetch_with_retries()
            except TokenEndpointError as exc:
                if self._token is not None and time.monotonic() < self._expires_at:
                    log.warning("%r: refreshing the token failed; using the cached one: %s", self, exc)
                    return self._token
                raise
            now = time.monotonic()
            self._token = token
            self._refresh_at = now + lifetime_s * self._refresh_ratio
            self._expires_at = now + lifetime_s
            self.fetches += 1
            return token

    async def _fetch_with_retries(self) -> tuple[str, float]:
        attempt = 0
        while True:
            try:
                return await anyio.to_thread.run_sync(self._fetch, abandon_on_cancel=True)
            except _Retriable as exc:
                if attempt >= self._retries:
                    raise TokenEndpointUnavailableError(
                        f"{self._who()}: no token after {attempt + 1} attempts: {exc}"
                    ) from None
                delay = self._backoff.delay_s(attempt)
                log.info("%r: %s; retrying in %.2f s", self, exc, delay)
                attempt += 1
                await anyio.sleep(delay)

    def _who(self) -> str:
        return f"token endpoint {self.token_endpoint_url} (client_id {self.client_id!r})"

    def _grant(self) -> tuple[dict[str, str], dict[str, str]]:
        """The grant's form fields and extra headers: client credentials, HTTP Basic."""
        pair = f"{urllib.parse.quote(self.client_id, safe='')}:{urllib.parse.quote(self._secret, safe='')}"
        return {"grant_type": "client_credentials"}, {
            "Authorization": "Basic " + base64.b64encode(pair.encode()).decode()
        }

    def _request(self) -> urllib.request.Request:
        form, headers = self._grant()
        if self._scope:
            form["scope"] = self._scope
        if self._audience:
            form["audience"] = self._audience
        return urllib.request.Request(
            self.token_endpoint_url,
            data=urllib.parse.urlencode(form).encode(),
            method="POST",
            headers={
                **headers,
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
        )

    def _fetch(self) -> tuple[str, float]:
        """One HTTP exchange (in a worker thread): (token, lifetime in seconds)."""
        request = self._request()
        try:
            with urllib.request.urlopen(
                request, timeout=self._timeout_s, context=self._ssl_context
            ) as answer:
                body = answer.read(1 << 20)
        except urllib.error.HTTPError as exc:
            reason = f"HTTP {exc.code}{_oauth_error(exc)}"
            if exc.code in RETRIABLE_STATUSES:
                raise _Retriable(reason) from None
            raise TokenEndpointError(f"{self._who()} refused the request: {reason}") from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            raise _Retriable(f"cannot reach it: {getattr(exc, 'reason', exc)}") from None
        return self._parse(body)

    def _parse(self, body: bytes) -> tuple[str, float]:
        try:
            document = json.loads(body)
            token = document["access_token"]
        except (ValueError, KeyError, TypeError):
            raise TokenEndpointError(f"{self._who()} answered without an access_token") from None
        if not isinstance(token, str) or not token:
            raise TokenEndpointError(f"{self._who()} answered an access_token that is not a string")
        expires_in = document.get("expires_in")
        exp = _jwt_expiry(token)
        lifetimes = [] if exp is None else [exp - time.time()]  # a JWT's exp is what brokers check
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool) and expires_in > 0:
            lifetimes.append(float(expires_in))
        if not lifetimes:
            raise TokenEndpointError(
                f"{self._who()} answered a token without expires_in, and it is not a JWT with exp"
            )
        return token, max(min(lifetimes), 0.0)


JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class JWTBearerTokenProvider(OIDCTokenProvider):
    """Access tokens by the JWT-bearer grant (RFC 7523; Java's ``JwtBearerJwtRetriever``):
    the client proves itself with a signed JWT, its *assertion*, instead of a secret.

    ``assertion_file``: a file holding the assertion, read again for every token (Java's
    ``sasl.oauthbearer.assertion.file``: something else keeps it fresh), or ``assertion``: a
    function returning one (e.g. signing with your key). ``client_id`` is sent when given.
    The other keywords are :class:`OIDCTokenProvider`'s.
    """

    def __init__(
        self,
        token_endpoint_url: str,
        *,
        assertion_file: str | os.PathLike[str] | None = None,
        assertion: Callable[[], str] | None = None,
        client_id: str | None = None,
        **options: Any,
    ) -> None:
        if (assertion_file is None) == (assertion is None):
            raise ValueError("JWTBearerTokenProvider needs one of assertion_file and assertion")
        self._assertion_file = None if assertion_file is None else Path(assertion_file)
        self._assertion = assertion
        super().__init__(token_endpoint_url, client_id or "", "", **options)

    def _check_credentials(self, client_id: str, client_secret: str) -> None:
        pass  # the assertion is the credential

    def _grant(self) -> tuple[dict[str, str], dict[str, str]]:
        if self._assertion_file is not None:
            try:
                assertion = self._assertion_file.read_text().strip()
            except OSError as exc:
                where = self._assertion_file
                raise TokenEndpointError(f"cannot read the assertion file {where}: {exc}") from None
        else:
            assert self._assertion is not None
            assertion = self._assertion()
        if not isinstance(assertion, str) or assertion.count(".") != 2:
            raise TokenEndpointError(
                f"{type(self).__name__}: the assertion is not a JWT (header.payload.signature)"
            )
        form = {"grant_type": JWT_BEARER_GRANT, "assertion": assertion}
        if self.client_id:
            form["client_id"] = self.client_id
        return form, {}


class _Retriable(Exception):
    """A failure another attempt may not see (no answer, a 5xx)."""


def _oauth_error(exc: urllib.error.HTTPError) -> str:
    """The endpoint's RFC 6749 5.2 ``error`` and ``error_description``, if it gave them."""
    try:
        document = json.loads(exc.read(64 * 1024))
    except (ValueError, OSError):
        return ""
    if not isinstance(document, dict):
        return ""
    parts = [str(document[k])[:300] for k in ("error", "error_description") if k in document]
    return f" ({': '.join(parts)})" if parts else ""


def _jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT (read, not verified: the broker verifies it)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, TypeError):
        return None
    exp = payload.get("exp") if isinstance(payload, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


__all__ = [
    "JWTBearerTokenProvider",
    "OIDCTokenProvider",
    "TokenEndpointError",
    "TokenEndpointUnavailableError",
]
