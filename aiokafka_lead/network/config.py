"""Connection settings shared by every connection a client opens."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class ConnectionConfig:
    client_id: str = "aiokafka_lead"
    request_timeout_ms: int = 30_000
    connect_timeout_ms: int = 10_000
    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str = "PLAIN"
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = None
    max_in_flight: int = 5
    max_frame_size: int = 100 * 1024 * 1024
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000
    connections_max_idle_ms: int = 540_000

    def __post_init__(self) -> None:
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                f"not {self.security_protocol!r}"
            )
        if self.uses_tls and self.ssl_context is None:
            raise ValueError(f"security_protocol={self.security_protocol} needs an ssl_context")
        if self.uses_sasl and (self.sasl_plain_username is None or self.sasl_plain_password is None):
            raise ValueError(
                f"security_protocol={self.security_protocol} needs sasl_plain_username "
                "and sasl_plain_password"
            )
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")
