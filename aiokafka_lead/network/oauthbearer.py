"""SASL/OAUTHBEARER (RFC 7628, KIP-255, KIP-342 extensions) as a sans-I/O step machine.

The client's first message is the GS2 header and the key/value pairs
``n,,\\x01auth=Bearer <token>\\x01[key=value\\x01...]\\x01``. A broker that accepts the
token answers with an empty message; one that refuses it answers with an error JSON
document (``{"status": "invalid_token", ...}``), to which the client must send a single
``\\x01``, after which the broker fails the exchange. The JSON is kept and named in the
error. :func:`fetch_token` asks the user's token provider (``token()`` a coroutine or a
plain function; ``extensions()`` optional). The token never appears in a repr, a log line
or an exception.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from typing import Any

import anyio.to_thread

from aiokafka_lead.errors import KafkaError, SaslAuthenticationFailedError
from aiokafka_lead.network.sasl import SaslError

# RFC 6750 b64token, and RFC 7628 key / value syntax
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_KEY = re.compile(r"[A-Za-z]+")
_VALUE = re.compile(r"[\x21-\x7e \t\r\n]*")
KVSEP = b"\x01"


def _check(token: str, extensions: Mapping[str, str]) -> None:
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        # the value itself is never shown: it may be a valid secret with a stray character
        raise SaslAuthenticationFailedError(
            "OAUTHBEARER: the token provider's token() did not return a bearer token "
            "(a non-empty string of RFC 6750 token characters)"
        )
    for key, value in extensions.items():
        if not isinstance(key, str) or not _KEY.fullmatch(key) or key == "auth":
            raise SaslAuthenticationFailedError(
                f"OAUTHBEARER: SASL extension name {key!r} is not allowed (letters only, not 'auth')"
            )
        if not isinstance(value, str) or not _VALUE.fullmatch(value):
            raise SaslAuthenticationFailedError(
                f"OAUTHBEARER: SASL extension {key!r} must be a string of printable characters"
            )


class OAuthBearerMechanism:
    """One OAUTHBEARER exchange with a token already fetched."""

    name = "OAUTHBEARER"

    def __init__(self, token: str, extensions: Mapping[str, str] | None = None) -> None:
        extensions = dict(extensions or {})
        _check(token, extensions)
        self._token = token
        self._extensions = extensions
        self._state = "initial"
        #: the broker's error document, when it refused the token
        self.server_error: str | None = None

    def __repr__(self) -> str:
        return f"<OAuthBearerMechanism extensions={sorted(self._extensions)} state={self._state}>"

    @property
    def complete(self) -> bool:
        return self._state == "done"

    @property
    def principal(self) -> str:
        return "the token provider's token"

    def initial_response(self) -> bytes:
        self._state = "sent"
        pairs = [f"auth=Bearer {self._token}"] + [f"{k}={v}" for k, v in self._extensions.items()]
        return b"n,," + KVSEP + KVSEP.join(p.encode() for p in pairs) + KVSEP + KVSEP

    def step(self, challenge: bytes) -> bytes | None:
        if self._state == "sent":
            if not challenge:
                self._state = "done"
                return None
            self.server_error = _describe_error(challenge)
            self._state = "refused"
            return KVSEP  # RFC 7628 3.2.3: acknowledge; the broker then fails the exchange
        raise SaslError(
            f"the broker refused the OAUTHBEARER token: {self.server_error or 'no reason given'}"
        )

    def failure_detail(self) -> str:
        return f" (the broker's answer: {self.server_error})" if self.server_error else ""


def _describe_error(challenge: bytes) -> str:
    """The broker's error JSON, shown as it is (it never holds the token), or a summary."""
    text = challenge.decode("utf-8", "replace")
    try:
        document = json.loads(text)
    except ValueError:
        return f"an unparsable error message {text[:200]!r}"
    if not isinstance(document, dict):
        return f"an unexpected error message {text[:200]!r}"
    return json.dumps(document, sort_keys=True)


async def fetch_token(provider: Any) -> tuple[str, dict[str, str]]:
    """``provider.token()`` and ``provider.extensions()``: coroutine functions are awaited,
    plain functions run in a worker thread (they may block on I/O). A provider that fails
    raises :class:`SaslAuthenticationFailedError` naming the provider and its error."""
    name = type(provider).__name__
    try:
        token = await _call(provider.token)
        extensions_fn = getattr(provider, "extensions", None)
        extensions = {} if extensions_fn is None else await _call(extensions_fn)
    except KafkaError:
        raise
    except Exception as exc:
        raise SaslAuthenticationFailedError(f"OAUTHBEARER: the token provider {name} failed: {exc}") from exc
    if extensions is None:
        extensions = {}
    if not isinstance(extensions, Mapping):
        raise SaslAuthenticationFailedError(
            f"OAUTHBEARER: {name}.extensions() must return a mapping of str to str"
        )
    if not isinstance(token, str):
        raise SaslAuthenticationFailedError(
            f"OAUTHBEARER: {name}.token() must return a str, not {type(token).__name__}"
        )
    return token, dict(extensions)


async def _call(method: Any) -> Any:
    if inspect.iscoroutinefunction(method):
        return await method()
    result = await anyio.to_thread.run_sync(method)
    if inspect.isawaitable(result):
        return await result
    return result
