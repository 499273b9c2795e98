"""One SASL authentication on a connection: SaslHandshake, then SaslAuthenticate rounds.

Used for the first authentication and for every KIP-368 re-authentication (the same
exchange on the live connection). Returns the session lifetime the broker gave
(``SessionLifetimeMs``; 0 when the broker does not limit it), after which the connection
must re-authenticate before sending anything else.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread

from aiokafka_lead.errors import SaslAuthenticationFailedError, UnsupportedSaslMechanismError, error_for_code
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.oauthbearer import OAuthBearerMechanism, fetch_token
from aiokafka_lead.network.sasl import SaslError, SaslMechanism, create_mechanism
from aiokafka_lead.protocol.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

Send = Callable[[Any], Awaitable[Any]]

#: Java's client: re-authenticate at 85-95% of the session lifetime (random, so a client's
#: connections do not all re-authenticate at once)
REAUTH_WINDOW = (0.85, 0.95)
#: a broker refuses a re-authentication that begins less than a second after the previous
#: one began (KafkaChannel's MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS); a little margin on top
MIN_REAUTH_INTERVAL_S = 1.1


async def new_mechanism(config: ConnectionConfig, host: str, broker: str) -> SaslMechanism:
    """A fresh step machine for one exchange (OAUTHBEARER asks the provider for a token)."""
    try:
        return await _new_mechanism(config, host)
    except SaslError as exc:
        raise SaslAuthenticationFailedError(f"SASL {config.sasl_mechanism} with {broker}: {exc}") from exc


async def _new_mechanism(config: ConnectionConfig, host: str) -> SaslMechanism:
    mechanism = config.sasl_mechanism
    if mechanism == "OAUTHBEARER":
        token, extensions = await fetch_token(config.sasl_oauth_token_provider)
        return OAuthBearerMechanism(token, extensions)
    if mechanism == "GSSAPI":
        from aiokafka_lead.network.gssapi import GssapiMechanism

        return GssapiMechanism(
            config.sasl_kerberos_service_name, config.sasl_kerberos_domain_name or host
        )
    assert config.sasl_plain_username is not None and config.sasl_plain_password is not None
    return create_mechanism(mechanism, config.sasl_plain_username, config.sasl_plain_password)


def _who(mechanism: SaslMechanism, config: ConnectionConfig) -> str:
    if config.sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        return f" as {config.sasl_plain_username!r}"
    principal = getattr(mechanism, "principal", None)
    return f" ({principal})" if principal else ""


async def authenticate(
    send: Send, config: ConnectionConfig, host: str, broker: str, mechanism: SaslMechanism | None = None
) -> int:
    """Run one SASL exchange through ``send`` (with ``mechanism``, or a new one); return the
    broker's session lifetime in ms. ``mechanism`` is given for re-authentications."""
    reauthenticating = mechanism is not None
    if mechanism is None:
        mechanism = await new_mechanism(config, host, broker)
    hs: SaslHandshakeResponse = await send(SaslHandshakeRequest(mechanism=mechanism.name))
    if reauthenticating and hs.error_code:
        # e.g. ILLEGAL_SASL_STATE: the broker refuses this re-authentication
        raise error_for_code(hs.error_code, f"{broker} refused to re-authenticate with {mechanism.name}")
    if hs.error_code and not hs.mechanisms:
        # a PLAINTEXT or SSL listener answers ILLEGAL_SASL_STATE (or nothing at all)
        raise UnsupportedSaslMechanismError(
            f"{broker} does not use SASL (it enables no mechanism): connect to its "
            f"SASL listener, or use security_protocol 'PLAINTEXT' or 'SSL' for this one"
        )
    if hs.error_code:
        raise UnsupportedSaslMechanismError(
            f"{broker} does not enable SASL mechanism {mechanism.name}; enabled: {', '.join(hs.mechanisms)}"
        )
    # a mechanism marked blocking (GSSAPI: its steps may ask the KDC) steps in a worker thread
    blocking = getattr(mechanism, "blocking", False)
    try:
        if blocking:
            message: bytes | None = await anyio.to_thread.run_sync(mechanism.initial_response)
        else:
            message = mechanism.initial_response()
    except SaslError as exc:
        raise SaslAuthenticationFailedError(f"SASL {mechanism.name} with {broker}: {exc}") from exc
    lifetime_ms = 0
    while message is not None:
        resp: SaslAuthenticateResponse = await send(SaslAuthenticateRequest(auth_bytes=message))
        if resp.error_code:
            detail = getattr(mechanism, "failure_detail", lambda: "")()
            raise SaslAuthenticationFailedError(
                f"SASL {mechanism.name} authentication{_who(mechanism, config)} to {broker} failed: "
                f"{resp.error_message or 'no reason given'}{detail}"
            )
        lifetime_ms = getattr(resp, "session_lifetime_ms", 0) or 0
        try:
            challenge = bytes(resp.auth_bytes)
            if blocking:
                message = await anyio.to_thread.run_sync(mechanism.step, challenge)
            else:
                message = mechanism.step(challenge)
        except SaslError as exc:
            raise SaslAuthenticationFailedError(f"SASL {mechanism.name} with {broker}: {exc}") from exc
    return lifetime_ms


def reauth_delay_s(lifetime_ms: int) -> float:
    """When to re-authenticate after an authentication that began now (seconds)."""
    return lifetime_ms / 1000 * random.uniform(*REAUTH_WINDOW)
