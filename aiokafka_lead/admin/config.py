"""The admin client's configuration: the shared connection settings (see
:mod:`aiokafka_lead.network.config`) under the admin client's own name."""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka_lead.abc import AbstractTokenProvider
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.options import override
from aiokafka_lead.validation import options_of


@dataclass(frozen=True, kw_only=True)
class AdminConfig(ConnectionConfig):
    """Everything an admin client is configured with."""

    CLIENT = "admin client"

    client_id: str | None = override(ConnectionConfig, "client_id", "aiokafka-lead-admin")


class AdminKeywords:
    """The admin clients' constructor: aiokafka's keywords, each declared in
    ``ConnectionConfig`` with the same default (``tests/unit/test_config.py`` checks), built
    into one AdminConfig."""

    def __init__(
        self,
        *,
        bootstrap_servers: str | Sequence[str] = "localhost",
        client_id: str = "aiokafka-lead-admin",
        request_timeout_ms: int = 40_000,
        connections_max_idle_ms: int = 540_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        metadata_max_age_ms: int = 300_000,
        security_protocol: str = "PLAINTEXT",
        ssl_context: ssl.SSLContext | None = None,
        api_version: str | None = "auto",
        sasl_mechanism: str = "PLAIN",
        sasl_plain_username: str | None = None,
        sasl_plain_password: str | None = None,
        sasl_oauth_token_provider: AbstractTokenProvider | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        **unsupported: Any,
    ) -> None:
        self._configure(AdminConfig.build(options_of(locals()), unsupported))

    def _configure(self, config: AdminConfig) -> None:
        raise NotImplementedError


__all__ = ["AdminConfig", "AdminKeywords"]
