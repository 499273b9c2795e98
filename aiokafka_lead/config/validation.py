"""Checks shared by the client configurations and calls: bootstrap addresses, security
settings that cannot work together, aiokafka's ``loop=`` keyword, offsets to commit.

The options themselves (default, rule, description) are declared in the configuration
classes (:mod:`aiokafka_lead.config.options`); what fails is reported as
:class:`KafkaConfigurationError` (aiokafka's name; also a ``ValueError``, which is what
aiokafka raises).
"""

from __future__ import annotations

import importlib.util
import ssl
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka_lead.errors import KafkaConfigurationError
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
#: mechanisms that take sasl_plain_username / sasl_plain_password
PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def warn_loop_argument(loop: object) -> None:
    """aiokafka still takes ``loop=`` with a DeprecationWarning; so do we (and ignore it)."""
    if loop is not None:
        warnings.warn(
            "The loop argument is deprecated and ignored: clients use the running event loop",
            DeprecationWarning,
            stacklevel=3,
        )


def options_of(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A constructor's keyword arguments, from ``locals()`` taken as its first statement."""
    return {k: v for k, v in arguments.items() if k not in ("self", "unsupported", "topics")}


def parse_bootstrap(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    """``"h1:9092,h2"`` or ``["h1:9092", "[::1]:9093"]`` -> ``[(host, port), ...]``."""
    if isinstance(servers, str):
        items: list[Any] = servers.split(",")
    elif isinstance(servers, Sequence):
        items = list(servers)
    else:
        raise KafkaConfigurationError(
            f"bootstrap_servers must be 'host:port,...' or a list of them, not {servers!r}"
        )
    out: list[tuple[str, int]] = []
    for raw in items:
        if not isinstance(raw, str):
            raise KafkaConfigurationError(f"bad bootstrap server {raw!r}: expected a 'HOST:PORT' string")
        item = raw.strip()
        if not item:
            continue
        if item.startswith("["):
            host, bracket, rest = item[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ("9092" if not rest and bracket else "?")
        elif item.count(":") > 1:
            host, port = "", "?"  # a bare IPv6 address is ambiguous: it needs [brackets]
        else:
            host, _, port = item.partition(":") if ":" in item else (item, "", "9092")
        if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in host):
            raise KafkaConfigurationError(
                f"bad bootstrap server {raw!r}: expected HOST:PORT (port 1-65535, IPv6 as [ADDR]:PORT)"
            )
        out.append((host, int(port)))
    if not out:
        raise KafkaConfigurationError("bootstrap_servers is empty")
    return out


def check_security(
    protocol: str,
    ssl_context: Any,
    sasl_mechanism: str,
    username: str | None,
    password: str | None,
    *,
    token_provider: Any = None,
    kerberos_service_name: Any = "kafka",
) -> None:
    """Settings that cannot work together fail here, not at the first connection."""
    if protocol not in SECURITY_PROTOCOLS:
        raise KafkaConfigurationError(
            f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, not {protocol!r}"
        )
    tls = protocol in ("SSL", "SASL_SSL")
    sasl = protocol in ("SASL_PLAINTEXT", "SASL_SSL")
    if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
        raise KafkaConfigurationError(
            f"ssl_context must be an ssl.SSLContext, not {type(ssl_context).__name__}"
        )
    if tls and ssl_context is None:
        raise KafkaConfigurationError(
            f"security_protocol={protocol} needs an ssl_context (e.g. ssl.create_default_context(cafile=...))"
        )
    if not tls and ssl_context is not None:
        raise KafkaConfigurationError(
            f"an ssl_context is given but security_protocol={protocol} does not use TLS: "
            "use 'SSL' or 'SASL_SSL'"
        )
    if ssl_context is not None and ssl_context.verify_mode == ssl.CERT_NONE and ssl_context.check_hostname:
        raise KafkaConfigurationError("ssl_context checks host names but verifies no certificate")
    if sasl:
        if sasl_mechanism not in SASL_MECHANISMS:
            raise KafkaConfigurationError(
                f"sasl_mechanism must be one of {', '.join(SASL_MECHANISMS)}, not {sasl_mechanism!r}"
            )
        if sasl_mechanism == "OAUTHBEARER":
            _check_token_provider(token_provider)
            return
        if sasl_mechanism == "GSSAPI":
            _check_kerberos(kerberos_service_name)
            return
        for name, value in (("sasl_plain_username", username), ("sasl_plain_password", password)):
            if not isinstance(value, str) or not value:
                raise KafkaConfigurationError(
                    f"security_protocol={protocol} with sasl_mechanism={sasl_mechanism} needs {name} "
                    "(a non-empty string)"
                )
    elif username is not None or password is not None:
        raise KafkaConfigurationError(
            f"SASL credentials are given but security_protocol={protocol} does not use SASL: "
            "use 'SASL_PLAINTEXT' or 'SASL_SSL'"
        )


def _check_token_provider(provider: Any) -> None:
    """aiokafka's rule: OAUTHBEARER needs an ``AbstractTokenProvider`` (any object with a
    ``token()`` method is taken; ``token()`` may be a coroutine function or a plain one)."""
    if provider is None:
        raise KafkaConfigurationError(
            "sasl_mechanism='OAUTHBEARER' needs sasl_oauth_token_provider, an "
            "aiokafka_lead.abc.AbstractTokenProvider (e.g. aiokafka_lead.auth.oidc.OIDCTokenProvider)"
        )
    if not callable(getattr(provider, "token", None)):
        raise KafkaConfigurationError(
            f"sasl_oauth_token_provider must implement token() (aiokafka_lead.abc.AbstractTokenProvider); "
            f"{type(provider).__name__} does not"
        )


def _check_kerberos(service_name: Any) -> None:
    if not isinstance(service_name, str) or not service_name:
        raise KafkaConfigurationError(
            f"sasl_kerberos_service_name must be a non-empty string, not {service_name!r}"
        )
    if importlib.util.find_spec("gssapi") is None:
        raise KafkaConfigurationError(
            "sasl_mechanism='GSSAPI' needs the gssapi package: pip install 'aiokafka_lead[gssapi]'"
        )


def commit_offsets_argument(
    offsets: Mapping[TopicPartition, int | OffsetAndMetadata | tuple[Any, ...]],
) -> dict[TopicPartition, OffsetAndMetadata]:
    """Offsets to commit in aiokafka's forms (an offset, (offset, metadata) or OffsetAndMetadata
    per TopicPartition), checked at the call as aiokafka checks them."""
    if not offsets or not isinstance(offsets, Mapping):
        raise ValueError(offsets)
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, value in offsets.items():
        if not isinstance(tp, TopicPartition):
            raise TypeError("Key should be TopicPartition instance")
        if isinstance(value, OffsetAndMetadata):
            out[tp] = value
            continue
        if isinstance(value, int):
            offset, metadata = value, ""
        else:
            try:
                offset, metadata = value
            except (TypeError, ValueError) as exc:
                raise ValueError(offsets) from exc
            if not isinstance(metadata, str):
                raise TypeError("Metadata should be a string")
        out[tp] = OffsetAndMetadata(offset, metadata, -1)
    return out
