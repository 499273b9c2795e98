"""A small OIDC identity provider for tests: a token endpoint and a JWKS endpoint.

Needs PyJWT and cryptography (``pip install pyjwt cryptography``; both are in the ``dev`` extra).

``OIDCServer`` serves, on 127.0.0.1 in a thread, ``POST /token`` (the client-credentials
grant, the client authenticated by HTTP Basic, or the JWT-bearer grant with an assertion
signed by a key given to ``trust_assertion_key``; it issues RS256 JWTs signed by its own key,
with ``sub`` = the client id, ``aud``, ``iss``, ``iat``, ``exp`` = now + ``lifetime_s``) and
``GET /jwks`` (the public key), which is what a broker's OAuthBearerValidatorCallbackHandler
reads. Tests steer it: ``fail_next(n, status)``, ``lifetime_s``, ``requests``; ``forged_token()``
and ``expired_token()`` make tokens the broker must refuse. Built on PyJWT + cryptography.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

AUDIENCE = "kafka"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
KID = "test-key-1"


class OIDCServer:
    def __init__(
        self, clients: dict[str, str] | None = None, *, lifetime_s: float = 60.0, unsigned: bool = False
    ) -> None:
        """``unsigned``: issue unsecured JWTs (``alg`` "none"), for brokers with Kafka's
        unsecured validator (the default cluster's OAUTHBEARER)."""
        self.clients = dict(clients or {"kafka-client": "client-secret"})
        self.lifetime_s = lifetime_s
        self.unsigned = unsigned
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._failures = 0  # token requests still to fail
        self._failure_status = 500
        self._assertion_keys: dict[str, Any] = {}  # subject -> public key of its assertions
        self._lock = threading.Lock()
        #: token requests received (every one, answered or failed)
        self.requests = 0
        #: tokens issued
        self.issued = 0
        #: when the last token issued expires (its ``exp``, seconds since the epoch)
        self.last_expiry = 0.0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="oidc-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def trust_assertion_key(self, subject: str, public_key: Any) -> None:
        """Accept JWT-bearer assertions for ``subject`` signed by this key (RFC 7523)."""
        self._assertion_keys[subject] = public_key

    def assertion_for(self, subject: str, private_key: Any, *, lifetime_s: float = 300) -> str:
        """An RFC 7523 assertion: ``iss`` = ``sub`` = ``subject``, ``aud`` = the token URL."""
        now = int(time.time())
        claims = {"iss": subject, "sub": subject, "aud": self.token_url, "iat": now,
                  "exp": int(now + lifetime_s), "jti": uuid.uuid4().hex}  # fmt: skip
        return jwt.encode(claims, private_key, algorithm="RS256")

    def fail_next(self, count: int, status: int) -> None:
        """Answer the next ``count`` token requests with HTTP ``status``."""
        with self._lock:
            self._failures, self._failure_status = count, status

    # ------------------------------------------------------------------ tokens
    def token_for(
        self,
        subject: str,
        *,
        lifetime_s: float | None = None,
        issued_at: float | None = None,
        key: Any = None,
    ) -> str:
        """A token for ``subject`` signed by this server's key (or ``key``)."""
        now = time.time() if issued_at is None else issued_at
        claims = {
            "sub": subject,
            "aud": AUDIENCE,
            "iss": self.issuer,
            "iat": int(now),
            "exp": int(now + (self.lifetime_s if lifetime_s is None else lifetime_s)),
            "scope": "kafka",
            "jti": uuid.uuid4().hex,
        }
        if self.unsigned and key is None:
            return jwt.encode(claims, "", algorithm="none")
        return jwt.encode(claims, key or self._key, algorithm="RS256", headers={"kid": KID})

    def forged_token(self, subject: str = "kafka-client") -> str:
        """Signed by another key under the real key's id: the signature check must fail."""
        return self.token_for(subject, key=rsa.generate_private_key(public_exponent=65537, key_size=2048))

    def expired_token(self, subject: str = "kafka-client") -> str:
        """Issued an hour ago, expired ten minutes ago (beyond any clock skew allowance)."""
        return self.token_for(subject, issued_at=time.time() - 3600, lifetime_s=3000)

    def jwks(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self._key.public_key()))
        public.update(kid=KID, use="sig", alg="RS256")
        return {"keys": [public]}

    # ------------------------------------------------------------------ HTTP
    def _token_answer(self, headers: Any, body: bytes) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests += 1
            if self._failures > 0:
                self._failures -= 1
                status = self._failure_status
                return status, {"error": "server_error", "error_description": f"told to fail with {status}"}
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if form.get("grant_type") == JWT_BEARER:
            return self._jwt_bearer(form.get("assertion", ""))
        if form.get("grant_type") != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        auth = headers.get("Authorization", "")
        try:
            client_id, _, secret = base64.b64decode(auth.removeprefix("Basic ")).decode().partition(":")
        except ValueError:
            client_id, secret = "", ""
        if not auth.startswith("Basic ") or self.clients.get(client_id) != secret:
            return 401, {"error": "invalid_client", "error_description": "Invalid client credentials"}
        token = self.token_for(client_id)
        with self._lock:
            self.issued += 1
            self.last_expiry = float(jwt.decode(token, options={"verify_signature": False})["exp"])
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": int(self.lifetime_s)}

    def _jwt_bearer(self, assertion: str) -> tuple[int, dict[str, Any]]:
        try:
            subject = jwt.decode(assertion, options={"verify_signature": False}).get("sub", "")
            key = self._assertion_keys.get(subject)
            if key is None:
                return 400, {"error": "invalid_grant", "error_description": f"unknown subject {subject!r}"}
            jwt.decode(assertion, key, algorithms=["RS256"], audience=self.token_url)
        except jwt.PyJWTError as exc:
            return 400, {"error": "invalid_grant", "error_description": str(exc)}
        with self._lock:
            self.issued += 1
        token = self.token_for(subject)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": int(self.lifetime_s)}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self, status: int, document: dict[str, Any]) -> None:
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/jwks":
                    self._answer(200, server.jwks())
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/token":
                    self._answer(404, {"error": "not_found"})
                    return
                self._answer(*server._token_answer(self.headers, body))

        return Handler


@contextmanager
def running_oidc_server(**kwargs: Any) -> Iterator[OIDCServer]:
    server = OIDCServer(**kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()
