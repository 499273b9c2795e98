"""Stand-in for ``KafkaCluster`` when tests run against a cluster someone else started.

Set ``AIOKAFKA_LEAD_BOOTSTRAP`` (and optionally ``AIOKAFKA_LEAD_BOOTSTRAP_<LISTENER>``,
``AIOKAFKA_LEAD_CA_FILE``) to point the fixtures at it; node operations are then
impossible, and say so instead of failing obscurely.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

from . import jars, tools
from .node import ClusterError

BOOTSTRAP_ENV = "AIOKAFKA_LEAD_BOOTSTRAP"


class ExternalClusterError(ClusterError):
    """A node operation was attempted on a cluster this process does not control."""


class ExternalCluster:
    """The subset of the ``KafkaCluster`` API that makes sense for a foreign cluster."""

    external = True

    def __init__(self, bootstrap: str, kafka_version: str = jars.DEFAULT_KAFKA_VERSION) -> None:
        self._bootstrap = bootstrap
        self.kafka_version = kafka_version
        ca = os.environ.get("AIOKAFKA_LEAD_CA_FILE")
        self.ca_file: Path | None = Path(ca) if ca else None
        self.users: dict[str, str] = {}

    @classmethod
    def from_env(cls) -> ExternalCluster | None:
        value = os.environ.get(BOOTSTRAP_ENV, "").strip()
        return cls(value) if value else None

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        name = listener.upper()
        if name == "PLAINTEXT":
            return self._bootstrap
        value = os.environ.get(f"{BOOTSTRAP_ENV}_{name}")
        if not value:
            raise ExternalClusterError(
                f"external cluster: set {BOOTSTRAP_ENV}_{name} to use the {name} listener"
            )
        return value

    def run_tool(
        self, main_class: str, *args: str, timeout: float = 120.0, check: bool = True
    ) -> str:
        """Kafka's tools work against any cluster: only the jars and a JVM are needed."""
        return tools.run_tool(self.kafka_version, main_class, *args, timeout=timeout, check=check)

    def _unsupported(self, what: str) -> NoReturn:
        raise ExternalClusterError(
            f"cannot {what}: the tests are pointed at an existing cluster via "
            f"{BOOTSTRAP_ENV}={self._bootstrap}, whose nodes this process does not control"
        )

    def stop_node(self, node_id: int, timeout: float = 60.0) -> None:
        self._unsupported(f"stop node {node_id}")

    def kill_node(self, node_id: int) -> None:
        self._unsupported(f"kill node {node_id}")

    def start_node(self, node_id: int, timeout: float = 90.0) -> None:
        self._unsupported(f"start node {node_id}")

    def restart_node(self, node_id: int, *, new_port: bool = False, timeout: float = 90.0) -> None:
        self._unsupported(f"restart node {node_id}")

    def down(self, grace: float = 5.0) -> None:
        """Nothing to do: the cluster belongs to whoever started it."""
