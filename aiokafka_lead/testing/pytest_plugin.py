"""pytest plugin (registered via the ``pytest11`` entry point): real-cluster fixtures.

Clusters start lazily, the first time a test asks for one, and are shared for the whole
session: starting Kafka costs seconds, so at most one 3-node and one 1-node cluster run
per session. Importing this module starts nothing and imports only the standard library.

With ``AIOKAFKA_LEAD_BOOTSTRAP`` set, the fixtures point at that existing cluster
instead; ``kafka_node_control`` then skips the tests that need to stop or kill nodes.
With ``AIOKAFKA_LEAD_CLUSTER=docker`` they are Docker containers of ``$KAFKA_IMAGE``
(``aiokafka_lead.testing.containers``, PLAINTEXT only) instead of the jar harness's JVMs.
``kafka_container`` is a single-node Docker broker in any mode; without a Docker engine
(or without testcontainers) the tests using it skip, saying why.

``versioned_cluster(tmp_path_factory, version, brokers)`` starts a cluster of another Kafka
version with the jar harness (PLAINTEXT, the testing profile), for a fixture parametrized
over versions (tests/integration/test_compat.py).

``schema_registry_url`` is a schema registry for the session: the in-memory one of
``aiokafka_lead.testing.schema_registry``, or the registry at ``AIOKAFKA_LEAD_SCHEMA_REGISTRY``
(a URL: Confluent Schema Registry, Karapace, Apicurio's ``/apis/ccompat/v7``) when set.

The plugin registers the fixtures above and nothing else (no hooks, no markers).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol, TypeVar

import pytest

from aiokafka_lead.testing.cluster.cluster import KafkaCluster
from aiokafka_lead.testing.cluster.config import CLIENT_PROTOCOLS
from aiokafka_lead.testing.cluster.external import BOOTSTRAP_ENV, ExternalCluster

if TYPE_CHECKING:
    from typing import TypeAlias

    from aiokafka_lead.testing.containers import KafkaContainer, KafkaContainerCluster

    AnyCluster: TypeAlias = KafkaCluster | ExternalCluster | KafkaContainerCluster

#: ``jar`` (default): the harness's local JVMs; ``docker``: containers of ``$KAFKA_IMAGE``.
CLUSTER_ENV = "AIOKAFKA_LEAD_CLUSTER"

#: a schema registry's URL: the tests use it instead of starting the in-memory one
SCHEMA_REGISTRY_ENV = "AIOKAFKA_LEAD_SCHEMA_REGISTRY"

#: Startup deadline: generous because CI machines may have two busy cores.
START_TIMEOUT = 120.0


def _session_cluster(tmp_path_factory: pytest.TempPathFactory, brokers: int) -> Iterator[AnyCluster]:
    external = ExternalCluster.from_env()
    if external is not None:
        yield external
        return
    if docker_mode():
        from aiokafka_lead.testing.containers import KafkaContainerCluster

        require_docker()
        yield from _running(KafkaContainerCluster(brokers, start_timeout=START_TIMEOUT))
        return
    directory = tmp_path_factory.mktemp(f"kafka-{brokers}node", numbered=True)
    # Every client listener at once, so one cluster serves all the security tests.
    yield from _running(
        KafkaCluster(directory, brokers, listeners=CLIENT_PROTOCOLS, profile="testing", stop_at_exit=True)
    )


def versioned_cluster(
    tmp_path_factory: pytest.TempPathFactory, version: str, brokers: int = 3
) -> Iterator[KafkaCluster]:
    """A ``brokers``-node KRaft cluster of Kafka ``version`` (jars provisioned on first use),
    stopped when the generator is closed: ``yield from`` it in a fixture."""
    directory = tmp_path_factory.mktemp(f"kafka-{version}-{brokers}node", numbered=True)
    yield from _running(
        KafkaCluster(directory, brokers, kafka_version=version, profile="testing", stop_at_exit=True)
    )


class _Startable(Protocol):
    def up(self, timeout: float) -> object: ...
    def down(self) -> None: ...


_C = TypeVar("_C", bound=_Startable)


def _running(cluster: _C) -> Iterator[_C]:
    """``cluster`` started (within ``START_TIMEOUT``), stopped when the generator is closed."""
    cluster.up(timeout=START_TIMEOUT)
    try:
        yield cluster
    finally:
        cluster.down()


def docker_mode() -> bool:
    kind = os.environ.get(CLUSTER_ENV, "jar").strip().lower() or "jar"
    if kind not in ("jar", "docker"):
        raise pytest.UsageError(f"{CLUSTER_ENV}={kind!r}: choose jar or docker")
    return kind == "docker"


@functools.cache
def docker_unavailable() -> str | None:
    """Why Docker tests cannot run here (None when they can): one reason, said once."""
    try:
        import testcontainers  # noqa: F401
    except ImportError:
        return "testcontainers is not installed (pip install 'aiokafka_lead[docker]')"
    from aiokafka_lead.testing.docker_engine import docker_problem

    return docker_problem()


def require_docker() -> None:
    """Skip Docker tests without Docker, unless Docker was asked for explicitly
    (``AIOKAFKA_LEAD_CLUSTER=docker``, or ``AIOKAFKA_LEAD_DOCKER=required`` as CI sets)."""
    reason = docker_unavailable()
    if reason is None:
        return
    if docker_mode() or os.environ.get("AIOKAFKA_LEAD_DOCKER", "") == "required":
        pytest.fail(f"Docker is required here but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def kafka_container() -> Iterator[KafkaContainer]:
    """A single-node KRaft broker in Docker (image ``$KAFKA_IMAGE``, default
    apache/kafka:4.4.0), shared by the session; ``.bootstrap_servers()`` from the host,
    ``.internal_bootstrap_servers()`` from containers on its network."""
    require_docker()
    from aiokafka_lead.testing.containers import KafkaContainer

    with KafkaContainer(start_timeout=START_TIMEOUT) as container:
        yield container


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnyCluster]:
    """A 3-node KRaft cluster (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL listeners)."""
    yield from _session_cluster(tmp_path_factory, 3)


@pytest.fixture(scope="session")
def kafka_cluster_1(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnyCluster]:
    """A single-node KRaft cluster with the same listeners."""
    yield from _session_cluster(tmp_path_factory, 1)


@pytest.fixture(scope="session")
def schema_registry_url() -> Iterator[str]:
    """A schema registry (Confluent REST API) for the session: ``$AIOKAFKA_LEAD_SCHEMA_REGISTRY``
    or the in-memory server, started on a free local port."""
    external = os.environ.get(SCHEMA_REGISTRY_ENV)
    if external:
        yield external.rstrip("/")
        return
    from aiokafka_lead.testing.schema_registry import SchemaRegistryServer

    with SchemaRegistryServer() as server:
        yield server.url


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_cluster: AnyCluster) -> str:
    """PLAINTEXT bootstrap servers of the 3-node cluster."""
    return kafka_cluster.bootstrap()


@pytest.fixture
def kafka_node_control(kafka_cluster: AnyCluster) -> KafkaCluster | KafkaContainerCluster:
    """The 3-node cluster for tests that stop, kill or restart nodes; skipped (with the
    reason) when the session is pointed at an external cluster."""
    if isinstance(kafka_cluster, ExternalCluster):
        pytest.skip(f"needs node control; {BOOTSTRAP_ENV} points at an external cluster")
    return kafka_cluster
