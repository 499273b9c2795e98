"""pytest plugin (registered via the ``pytest11`` entry point): real-cluster fixtures.

Clusters start lazily, the first time a test asks for one, and are shared for the whole
session: starting Kafka costs seconds, so at most one 3-node and one 1-node cluster run
per session. Importing this module starts nothing and imports only the standard library.

With ``AIOKAFKA_LEAD_BOOTSTRAP`` set, the fixtures point at that existing cluster
instead; ``kafka_node_control`` then skips the tests that need to stop or kill nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from aiokafka_lead.testing.cluster.cluster import KafkaCluster
from aiokafka_lead.testing.cluster.config import CLIENT_PROTOCOLS
from aiokafka_lead.testing.cluster.external import BOOTSTRAP_ENV, ExternalCluster

if TYPE_CHECKING:
    from typing import TypeAlias

    AnyCluster: TypeAlias = KafkaCluster | ExternalCluster

#: Startup deadline: generous because CI machines may have two busy cores.
START_TIMEOUT = 120.0


def _session_cluster(
    tmp_path_factory: pytest.TempPathFactory, brokers: int
) -> Iterator[AnyCluster]:
    external = ExternalCluster.from_env()
    if external is not None:
        yield external
        return
    directory = tmp_path_factory.mktemp(f"kafka-{brokers}node", numbered=True)
    # Every client listener at once, so one cluster serves all the security tests.
    cluster = KafkaCluster(
        directory, brokers, listeners=CLIENT_PROTOCOLS, profile="testing", stop_at_exit=True
    )
    cluster.up(timeout=START_TIMEOUT)
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnyCluster]:
    """A 3-node KRaft cluster (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL listeners)."""
    yield from _session_cluster(tmp_path_factory, 3)


@pytest.fixture(scope="session")
def kafka_cluster_1(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnyCluster]:
    """A single-node KRaft cluster with the same listeners."""
    yield from _session_cluster(tmp_path_factory, 1)


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_cluster: AnyCluster) -> str:
    """PLAINTEXT bootstrap servers of the 3-node cluster."""
    return kafka_cluster.bootstrap()


@pytest.fixture
def kafka_node_control(kafka_cluster: AnyCluster) -> KafkaCluster:
    """The 3-node cluster for tests that stop, kill or restart nodes; skipped (with the
    reason) when the session is pointed at an external cluster."""
    if isinstance(kafka_cluster, ExternalCluster):
        pytest.skip(f"needs node control; {BOOTSTRAP_ENV} points at an external cluster")
    return kafka_cluster
