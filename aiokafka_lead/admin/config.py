"""The admin client's configuration: the shared connection settings (see
:mod:`aiokafka_lead.network.config`) under the admin client's own name."""

from __future__ import annotations

from dataclasses import dataclass

from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.options import override


@dataclass(frozen=True, kw_only=True)
class AdminConfig(ConnectionConfig):
    """Everything an admin client is configured with."""

    CLIENT = "admin client"

    client_id: str | None = override(ConnectionConfig, "client_id", "aiokafka-lead-admin")


__all__ = ["AdminConfig"]
