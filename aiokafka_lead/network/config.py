"""The settings every client shares: how to reach and talk to the brokers.

Each option is declared once here (default, rule, description; see
:mod:`aiokafka_lead.config.options`). The producer's, consumer's and admin client's configurations
extend :class:`ConnectionConfig`, so one object carries a client's whole configuration: the
connections, the pool, the metadata refresher and the client's own parts all read it.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

from aiokafka_lead.abc import AbstractTokenProvider
from aiokafka_lead.config.options import (
    NON_NEGATIVE,
    POSITIVE,
    Options,
    Rule,
    choices,
    instance_of,
    option,
    optional,
)
from aiokafka_lead.config.validation import SECURITY_PROTOCOLS, check_security, parse_bootstrap
from aiokafka_lead.errors import KafkaConfigurationError


def _has_token_method(name: str, value: object) -> None:
    if not callable(getattr(value, "token", None)):
        raise KafkaConfigurationError(
            f"{name} must implement token() (aiokafka_lead.abc.AbstractTokenProvider); "
            f"{type(value).__name__} does not"
        )


#: aiokafka's AbstractTokenProvider, or any object with its token() method
TOKEN_PROVIDER = Rule("an aiokafka_lead.abc.AbstractTokenProvider", _has_token_method)
#: checked by parsing once (``ConnectionConfig.bootstrap``), after the other options' rules
BOOTSTRAP = Rule("'host[:port],...' or a list of 'host[:port]'", lambda name, value: None)


@dataclass(frozen=True, kw_only=True)
class ConnectionConfig(Options):
    """Connection settings shared by the three clients (and every connection they open)."""

    bootstrap_servers: str | Sequence[str] = option(
        "localhost", BOOTSTRAP, "brokers to fetch the first metadata from (port 9092 when left out)"
    )
    client_id: str | None = option(
        "aiokafka_lead",
        optional(instance_of(str, what="a string")),
        "the name sent with every request (broker logs, quotas); the producer's None: one of its own",
    )
    request_timeout_ms: int = option(40_000, POSITIVE, "how long a request waits for its answer")
    metadata_max_age_ms: int = option(
        300_000, POSITIVE, "metadata is refreshed at least this often, even without a change"
    )
    retry_backoff_ms: int = option(100, NON_NEGATIVE, "first wait before a retry (exponential, jittered)")
    retry_backoff_max_ms: int = option(1000, NON_NEGATIVE, "longest wait between retries")
    connections_max_idle_ms: int = option(540_000, POSITIVE, "a connection idle this long is closed")
    security_protocol: str = option(
        "PLAINTEXT", choices(*SECURITY_PROTOCOLS), "TLS and/or SASL on the broker connections"
    )
    ssl_context: ssl.SSLContext | None = option(
        None, None, "the TLS context for SSL and SASL_SSL (e.g. helpers.create_ssl_context())"
    )
    sasl_mechanism: str = option(
        "PLAIN", None, "SASL mechanism for SASL_PLAINTEXT / SASL_SSL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
        "OAUTHBEARER, GSSAPI"
    )
    sasl_plain_username: str | None = option(None, None, "SASL user name (PLAIN and SCRAM)")
    sasl_plain_password: str | None = option(None, None, "SASL password (PLAIN and SCRAM)", secret=True)
    sasl_oauth_token_provider: AbstractTokenProvider | None = option(
        None,
        optional(TOKEN_PROVIDER),
        "token source for SASL OAUTHBEARER (e.g. aiokafka_lead.auth.oidc.OIDCTokenProvider)",
        secret=True,
    )
    sasl_kerberos_service_name: str = option(
        "kafka", instance_of(str, what="a string"), "the brokers' Kerberos service name (GSSAPI)"
    )
    sasl_kerberos_domain_name: str | None = option(
        None,
        optional(instance_of(str, what="a string")),
        "the brokers' Kerberos domain (GSSAPI; None: each broker's host name)",
    )
    api_version: str | None = option(
        "auto", None, "accepted as aiokafka's; versions are always negotiated per broker"
    )
    enable_metrics_push: bool = option(
        True,
        None,
        "push the client's metrics to a broker that subscribes to them (KIP-714; Java's enable.metrics.push)",
    )
    # settings of the connections that no client constructor takes
    connect_timeout_ms: int = option(10_000, POSITIVE, "TCP + TLS connect timeout", keyword=False)
    max_in_flight: int = option(5, None, "requests waiting on one connection at once", keyword=False)
    max_frame_size: int = option(100 * 1024 * 1024, POSITIVE, "largest response accepted", keyword=False)
    reconnect_backoff_ms: int = option(50, NON_NEGATIVE, "first wait before reconnecting", keyword=False)
    reconnect_backoff_max_ms: int = option(
        1000, NON_NEGATIVE, "longest wait before reconnecting", keyword=False
    )

    def _check(self) -> None:
        super()._check()
        _ = self.bootstrap
        check_security(
            self.security_protocol,
            self.ssl_context,
            self.sasl_mechanism,
            self.sasl_plain_username,
            self.sasl_plain_password,
            token_provider=self.sasl_oauth_token_provider,
            kerberos_service_name=self.sasl_kerberos_service_name,
        )
        if self.max_in_flight < 1:
            raise KafkaConfigurationError("max_in_flight must be at least 1")

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @functools.cached_property
    def bootstrap(self) -> list[tuple[str, int]]:
        """``bootstrap_servers`` as ``(host, port)`` pairs."""
        return parse_bootstrap(self.bootstrap_servers)

    @property
    def retry_backoff_cap_ms(self) -> int:
        """The longest retry wait, never below the first one."""
        return max(self.retry_backoff_max_ms, self.retry_backoff_ms)
