"""The admin client's configuration: the shared connection settings (see
:mod:`aiokafka_lead.network.config`) under the admin client's own name."""

from __future__ import annotations

from dataclasses import dataclass

from aiokafka_lead.config.options import override
from aiokafka_lead.network.config import ConnectionConfig


@dataclass(frozen=True, kw_only=True)
class AdminConfig(ConnectionConfig):
    """Everything an admin client is configured with."""

    CLIENT = "admin client"
    #: the constructor's keyword order, aiokafka's (the other keywords follow in declaration order)
    KEYWORD_ORDER = (
        "bootstrap_servers", "client_id", "request_timeout_ms", "connections_max_idle_ms",
        "retry_backoff_ms", "retry_backoff_max_ms", "metadata_max_age_ms", "security_protocol",
        "ssl_context", "api_version",
    )

    client_id: str | None = override(ConnectionConfig, "client_id", "aiokafka-lead-admin", keyword_type="str")


__all__ = ["AdminConfig"]
