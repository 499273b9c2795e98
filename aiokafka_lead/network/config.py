"""Connection settings shared by every connection a client opens (see aiokafka_lead.validation)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any

from aiokafka_lead.errors import KafkaConfigurationError
from aiokafka_lead.validation import check_security


@dataclass(frozen=True, slots=True)
class ConnectionConfig:
    client_id: str = "aiokafka_lead"
    request_timeout_ms: int = 30_000
    connect_timeout_ms: int = 10_000
    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str = "PLAIN"
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = field(default=None, repr=False)
    sasl_kerberos_service_name: str = "kafka"
    sasl_kerberos_domain_name: str | None = None
    #: an aiokafka_lead.abc.AbstractTokenProvider (never shown: it may hold secrets)
    sasl_oauth_token_provider: Any = field(default=None, repr=False)
    max_in_flight: int = 5
    max_frame_size: int = 100 * 1024 * 1024
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000
    connections_max_idle_ms: int = 540_000

    def __post_init__(self) -> None:
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
