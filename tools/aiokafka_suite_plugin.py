"""pytest plugin: aiokafka 0.14's own test suite against a cluster of our harness.

Loaded by ``tools/aiokafka_suite.py`` (``pytest --noconftest -p aiokafka_suite_plugin``)
in a directory holding aiokafka's ``tests/`` unchanged. aiokafka's ``tests/conftest.py``
starts a Docker image and imports aiokafka's internals at module level, so it is not
loaded; this plugin provides the same fixtures (``kafka_server``, ``loop``,
``setup_test_class``, ``ssl_folder``, ...) with the Docker start replaced by a one-node
KRaft cluster of ``aiokafka_lead.testing.cluster`` (PLAINTEXT and SSL listeners, two
partitions per auto-created topic as aiokafka's image has).

Other pieces, the same for both runs (the real aiokafka and aiokafka_lead):

* ``send_messages`` of aiokafka's test base class waits for a topic through the
  producer's internal client; the plugin's own version waits through the public
  ``partitions_for()``, so a test is classified by what it does itself.
* Every test has a deadline (``AIOKAFKA_SUITE_DEADLINE`` seconds, 60 by default):
  SIGALRM raises ``SuiteDeadline`` in it, so a hang is reported and the run goes on.
* Under the aiokafka alias (``-p aiokafka_lead.testing.aiokafka_alias`` first), a name the
  test modules import from aiokafka that aiokafka_lead does not have (an internal module
  or class) is bound to a placeholder, so the module still imports; using the placeholder
  raises ``AiokafkaInternal`` naming it, and the test is classified as reaching into
  aiokafka's internals. ``aiokafka.util``'s asyncio shorthands (``create_task``,
  ``create_future``, ``get_running_loop``), which the tests use as helpers, are asyncio's.
"""

from __future__ import annotations

import ast
import asyncio
import datetime
import gc
import importlib
import os
import signal
import socket
import sys
import types
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: The Kafka version of the harness's cluster, what aiokafka's ``kafka_versions`` checks.
KAFKA_VERSION_ENV = "AIOKAFKA_SUITE_KAFKA_VERSION"
DEADLINE_ENV = "AIOKAFKA_SUITE_DEADLINE"
#: Partitions of an auto-created topic, as aiokafka's test image is configured.
NUM_PARTITIONS = 2
#: The password aiokafka's tests give ``create_ssl_context`` for the client key.
CLIENT_KEY_PASSWORD = b"abcdefgh"
START_TIMEOUT = 120.0


class AiokafkaInternal(AttributeError):
    """A test used a name of aiokafka's internals that aiokafka_lead does not have."""


class SuiteDeadline(BaseException):
    """A test ran past the plugin's per-test deadline (a BaseException: asyncio's callbacks
    and the tests' ``except Exception`` do not swallow it; pytest records it as a failure)."""


#: aiokafka.util's asyncio shorthands, which the tests use as their own helpers: under the
#: alias they are asyncio's, so a test is not counted as reaching into aiokafka for them.
ASYNCIO_SHORTHANDS: dict[str, Callable[..., Any]] = {
    "create_task": asyncio.create_task,
    "create_future": lambda: asyncio.get_running_loop().create_future(),
    "get_running_loop": asyncio.get_running_loop,
}


class _Placeholder:
    """Stands for an aiokafka internal name: any use raises ``AiokafkaInternal``."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise AiokafkaInternal(f"aiokafka internal {object.__getattribute__(self, '_name')}")

    __call__ = _refuse
    __iter__ = _refuse
    __bool__ = _refuse
    __eq__ = _refuse  # type: ignore[assignment]
    __hash__ = object.__hash__

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        self._refuse()

    def __repr__(self) -> str:
        return f"<aiokafka internal {object.__getattribute__(self, '_name')}>"


class _PlaceholderModule(types.ModuleType):
    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _Placeholder(f"{self.__name__}.{attr}")


#: What the placeholders stand for in this run: ``module.name`` -> how it is missing.
INTERNALS: dict[str, str] = {}


def _aiokafka_imports(directory: Path) -> Iterator[tuple[str, str]]:
    """``(module, name)`` of every ``from aiokafka... import name`` in the suite's files."""
    for path in sorted(directory.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and node.module is not None
                and (node.module == "aiokafka" or node.module.startswith("aiokafka."))
            ):
                for alias in node.names:
                    yield node.module, alias.name


def _module_or_none(name: str) -> types.ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def install_placeholders(directory: Path) -> None:
    """Bind each aiokafka name the suite imports and aiokafka_lead lacks to a placeholder."""
    for module_name, name in _aiokafka_imports(directory):
        module = sys.modules.get(module_name) or _module_or_none(module_name)
        if module is None:
            parent, _, child = module_name.rpartition(".")
            module = _PlaceholderModule(module_name)
            sys.modules[module_name] = module
            INTERNALS[module_name] = "module"
            parent_module = sys.modules.get(parent)
            if parent_module is not None and not hasattr(parent_module, child):
                setattr(parent_module, child, module)
        if isinstance(module, _PlaceholderModule):
            if module_name == "aiokafka.util" and name in ASYNCIO_SHORTHANDS:
                setattr(module, name, ASYNCIO_SHORTHANDS[name])
                continue
            INTERNALS.setdefault(f"{module_name}.{name}", "in a module aiokafka_lead lacks")
            continue
        if not hasattr(module, name) and _module_or_none(f"{module_name}.{name}") is None:
            setattr(module, name, _Placeholder(f"{module_name}.{name}"))
            INTERNALS[f"{module_name}.{name}"] = "name"


@dataclass
class KafkaServer:
    """What aiokafka's ``kafka_server`` fixture yields (its ``container`` has no use here)."""

    host: str
    port: int
    ssl_port: int
    sasl_plain_port: int
    sasl_ssl_port: int
    container: object = None

    @property
    def hosts(self) -> list[str]:
        return [f"{self.host}:{self.port}"]


class _NoDockerTool:
    """aiokafka's ACL / SCRAM / Kerberos helpers run tools inside its Docker image."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, attr: str) -> Any:
        raise RuntimeError(
            f"{self._what}.{attr}: aiokafka's tests run this inside their Docker image "
            "(ZooKeeper-era kafka-acls / kafka-configs, a KDC); the harness's cluster has none"
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--docker-image", action="store", default=None, help="ignored: no Docker")
    parser.addoption("--no-pull", action="store_true", help="ignored: no Docker")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ssl: Tests that require SSL certificates to run")
    from aiokafka_lead import as_aiokafka

    if as_aiokafka.installed():
        install_placeholders(Path(config.rootpath) / "tests")


def _kafka_version() -> str:
    from aiokafka_lead.testing.cluster import jars

    return os.environ.get(KAFKA_VERSION_ENV, jars.DEFAULT_KAFKA_VERSION)


@pytest.fixture(scope="session")
def docker() -> None:
    return None


@pytest.fixture(scope="session")
def kafka_image() -> str:
    return f"aiokafka-lead-harness:{_kafka_version()}"


@pytest.fixture(scope="session")
def docker_ip_address() -> str:
    return "127.0.0.1"


@pytest.fixture(scope="session")
def unused_port() -> Callable[[], int]:
    def factory() -> int:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
            return port

    return factory


@pytest.fixture(scope="session")
def session_id() -> str:
    return str(uuid.uuid4())


@pytest.fixture(scope="session")
def harness_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from aiokafka_lead.testing.cluster.cluster import KafkaCluster

    cluster = KafkaCluster(
        tmp_path_factory.mktemp("kafka"),
        1,
        kafka_version=_kafka_version(),
        listeners=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        profile="testing",
        extra_properties={"num.partitions": str(NUM_PARTITIONS)},
        stop_at_exit=True,
    )
    cluster.up(timeout=START_TIMEOUT)
    try:
        yield cluster
    finally:
        cluster.down()


def _port(cluster: Any, listener: str) -> int:
    return int(cluster.bootstrap(listener).rsplit(":", 1)[1])


@pytest.fixture(scope="session")
def kafka_server(harness_cluster: Any) -> KafkaServer:
    return KafkaServer(
        harness_cluster.host,
        _port(harness_cluster, "PLAINTEXT"),
        _port(harness_cluster, "SSL"),
        _port(harness_cluster, "SASL_PLAINTEXT"),
        _port(harness_cluster, "SASL_SSL"),
    )


@pytest.fixture(scope="session")
def ssl_folder(harness_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ca.crt`` (the cluster's CA) and a client certificate with its encrypted key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    folder = tmp_path_factory.mktemp("ssl_cert")
    (folder / "ca.crt").write_bytes(Path(harness_cluster.ca_file).read_bytes())
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "aiokafka suite client")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    (folder / "client.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "client.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(CLIENT_KEY_PASSWORD),
        )
    )
    return folder


@pytest.fixture(scope="class")
def acl_manager() -> _NoDockerTool:
    return _NoDockerTool("acl_manager")


@pytest.fixture(scope="class")
def kafka_config() -> _NoDockerTool:
    return _NoDockerTool("kafka_config")


@pytest.fixture(scope="class")
def kerberos_utils() -> _NoDockerTool:
    return _NoDockerTool("kerberos_utils")


@pytest.fixture(scope="class")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    if not loop.is_closed():
        loop.call_soon(loop.stop)
        loop.run_forever()
        loop.close()
    gc.collect()
    asyncio.set_event_loop(None)


@pytest.fixture(autouse=True)
def collect_garbage() -> Iterator[None]:
    yield
    gc.collect()


@pytest.fixture(scope="class")
def setup_test_class_serverless(request: pytest.FixtureRequest, loop: asyncio.AbstractEventLoop) -> None:
    request.cls.loop = loop


async def _send_messages(
    self: Any,
    partition: int,
    messages: list[Any],
    *,
    topic: str | None = None,
    timestamp_ms: int | None = None,
    return_inst: bool = False,
    headers: list[tuple[str, bytes]] | None = None,
) -> list[Any]:
    """aiokafka's helper, waiting for the topic through the public ``partitions_for()``."""
    from aiokafka.producer import AIOKafkaProducer

    topic = topic or self.topic
    sent: list[Any] = []
    producer = AIOKafkaProducer(bootstrap_servers=self.hosts)
    await producer.start()
    try:
        await producer.partitions_for(topic)
        for msg in messages:
            text = str(msg) if isinstance(msg, int) else msg
            value = text.encode() if isinstance(text, str) else text
            handle = await producer.send(
                topic, value, partition=partition, timestamp_ms=timestamp_ms, headers=headers
            )
            meta = await handle
            assert (meta.topic, meta.partition) == (topic, partition)
            sent.append(meta if return_inst else value)
    finally:
        await producer.stop()
    return sent


@pytest.fixture(scope="class")
def setup_test_class(  # noqa: PLR0917 - aiokafka's fixture names, requested positionally by pytest
    request: pytest.FixtureRequest,
    loop: asyncio.AbstractEventLoop,
    kafka_server: KafkaServer,
    ssl_folder: Path,
    acl_manager: _NoDockerTool,
    kerberos_utils: _NoDockerTool,
    kafka_config: _NoDockerTool,
) -> None:
    cls = request.cls
    cls.loop = loop
    cls.kafka_host = kafka_server.host
    cls.kafka_port = kafka_server.port
    cls.kafka_ssl_port = kafka_server.ssl_port
    cls.kafka_sasl_plain_port = kafka_server.sasl_plain_port
    cls.kafka_sasl_ssl_port = kafka_server.sasl_ssl_port
    cls.ssl_folder = ssl_folder
    cls.acl_manager = acl_manager
    cls.kerberos_utils = kerberos_utils
    cls.kafka_config = kafka_config
    cls.hosts = kafka_server.hosts
    cls.kafka_version = _kafka_version()
    cls.send_messages = _send_messages


#: after the deadline, the alarm repeats at this interval until the test has ended: a raise
#: inside an asyncio callback is only logged by the loop, one in its select() ends the test
REPEAT_S = 2.0


def _on_deadline(signum: int, frame: types.FrameType | None) -> None:
    signal.setitimer(signal.ITIMER_REAL, REPEAT_S)
    raise SuiteDeadline(f"the test ran past the suite's deadline ({os.environ.get(DEADLINE_ENV, '60')} s)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    deadline = float(os.environ.get(DEADLINE_ENV, "60"))
    previous = signal.signal(signal.SIGALRM, _on_deadline)
    signal.setitimer(signal.ITIMER_REAL, deadline)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
