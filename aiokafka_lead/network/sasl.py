"""SASL mechanisms as sans-I/O step machines (PLAIN, SCRAM-SHA-256/512).

The connection sends SaslHandshake, then feeds each SaslAuthenticate response's
``auth_bytes`` to :meth:`SaslMechanism.step` and sends what it returns, until the
mechanism reports completion. No sockets here; errors are
:class:`~aiokafka_lead.errors.SaslAuthenticationFailedError`-style
:class:`SaslError` raised before anything more is sent.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Protocol

from aiokafka_lead.errors import KafkaError

# Kafka refuses SCRAM iteration counts below 4096 (ScramMechanism.minIterations).
MIN_SCRAM_ITERATIONS = 4096


class SaslError(KafkaError):
    """The SASL exchange failed on the client side (bad server message, bad signature)."""


class SaslMechanism(Protocol):
    """One authentication exchange; a fresh instance per connection."""

    name: str

    @property
    def complete(self) -> bool: ...

    def initial_response(self) -> bytes: ...

    def step(self, challenge: bytes) -> bytes | None:
        """Consume the server's message; return the next client message, None when done."""
        ...


class PlainMechanism:
    """RFC 4616: one message, ``authzid NUL authcid NUL passwd``."""

    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._username = username
        self._password = password
        self._complete = False

    @property
    def complete(self) -> bool:
        return self._complete

    def initial_response(self) -> bytes:
        return b"\0" + self._username.encode() + b"\0" + self._password.encode()

    def step(self, challenge: bytes) -> bytes | None:
        self._complete = True
        return None


_SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def _escape_username(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _parse_attributes(message: bytes) -> dict[str, str]:
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SaslError("SCRAM server message is not UTF-8") from exc
    attrs: dict[str, str] = {}
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise SaslError(f"malformed SCRAM attribute {part!r}")
        attrs[part[0]] = part[2:]
    return attrs


class ScramMechanism:
    """RFC 5802 SCRAM client, for SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 7677)."""

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str,
        *,
        nonce: str | None = None,
        hash_name: str | None = None,
    ) -> None:
        if hash_name is None:
            if mechanism not in _SCRAM_HASHES:
                raise ValueError(f"unsupported SCRAM mechanism {mechanism!r}")
            hash_name = _SCRAM_HASHES[mechanism]
        self.name = mechanism
        self._hash = hash_name
        self._password = password.encode("utf-8")
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._first_bare = f"n={_escape_username(username)},r={self._nonce}"
        self._state = "initial"
        self._server_signature = b""

    @property
    def complete(self) -> bool:
        return self._state == "done"

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self._hash).digest()

    def initial_response(self) -> bytes:
        self._state = "first-sent"
        return ("n,," + self._first_bare).encode("utf-8")

    def step(self, challenge: bytes) -> bytes | None:
        if self._state == "first-sent":
            return self._client_final(challenge)
        if self._state == "final-sent":
            self._verify_server_final(challenge)
            return None
        raise SaslError(f"unexpected SCRAM message in state {self._state}")

    def _client_final(self, server_first: bytes) -> bytes:
        attrs = _parse_attributes(server_first)
        if "e" in attrs:
            raise SaslError(f"SCRAM server error: {attrs['e']}")
        try:
            nonce, salt_b64, iterations = attrs["r"], attrs["s"], int(attrs["i"])
            salt = base64.b64decode(salt_b64, validate=True)
        except (KeyError, ValueError) as exc:
            raise SaslError(f"malformed SCRAM server-first message: {exc}") from exc
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslError("SCRAM server nonce does not extend the client nonce")
        if iterations < MIN_SCRAM_ITERATIONS and self.name in _SCRAM_HASHES:
            raise SaslError(f"SCRAM iteration count {iterations} below {MIN_SCRAM_ITERATIONS}")
        salted = hashlib.pbkdf2_hmac(self._hash, self._password, salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{server_first.decode()},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        self._state = "final-sent"
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify_server_final(self, server_final: bytes) -> None:
        attrs = _parse_attributes(server_final)
        if "e" in attrs:
            raise SaslError(f"SCRAM server error: {attrs['e']}")
        try:
            signature = base64.b64decode(attrs["v"], validate=True)
        except (KeyError, ValueError) as exc:
            raise SaslError("malformed SCRAM server-final message") from exc
        if not hmac.compare_digest(signature, self._server_signature):
            raise SaslError("SCRAM server signature mismatch: the server does not know the password")
        self._state = "done"


def create_mechanism(mechanism: str, username: str, password: str) -> SaslMechanism:
    """The step machine for a ``sasl_mechanism`` name as aiokafka spells it."""
    if mechanism == "PLAIN":
        return PlainMechanism(username, password)
    if mechanism in _SCRAM_HASHES:
        return ScramMechanism(mechanism, username, password)
    raise ValueError(f"unsupported sasl_mechanism {mechanism!r}; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
