"""Real KRaft Kafka brokers in Docker, on testcontainers-python.

testcontainers' own ``KafkaContainer`` runs KRaft only with Confluent images; this module
runs the official ``apache/kafka`` image (or any image with its contract: ``KAFKA_*``
environment variables become ``server.properties``, ``CLUSTER_ID`` formats the storage,
such as the one ``make kafka-image`` builds, used when the official one is not in the
engine and ``KAFKA_IMAGE`` is unset), one node or N nodes on one Docker network::

    from aiokafka_lead.testing.containers import KafkaContainer, KafkaContainerCluster

    with KafkaContainer() as kafka:                  # one combined broker+controller
        kafka.bootstrap_servers()                    # "127.0.0.1:<port>" from the host
        kafka.internal_bootstrap_servers()           # "kafka-1:19092" from other containers

    with KafkaContainerCluster(brokers=3) as cluster:
        cluster.bootstrap()                          # every node, from the host
        cluster.kill_node(2); cluster.start_node(2)  # also stop_node, restart_node(new_port=True)

Each node has three listeners: EXTERNAL (container port 9092, published on a free host
port and advertised as ``<docker host>:<that port>``), INTERNAL (``kafka-<id>:19092`` on
the network: inter-broker traffic and other containers) and CONTROLLER (``kafka-<id>:29093``).
Readiness is a Metadata request from the host that lists every running node at its
advertised port; a node that exits or never gets ready fails with its container log.
The broker settings are the jar harness's (``cluster/config.py``), so both clusters
behave alike. ``KAFKA_IMAGE`` chooses the image (default ``apache/kafka:4.4.0``).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import docker.errors
from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer
from testcontainers.core.docker_client import DockerClient
from testcontainers.core.network import Network

from . import docker_engine
from .cluster import config, jars, probe, tools
from .cluster.cluster import _new_cluster_id
from .cluster.config import NodePorts, SecurityFiles
from .cluster.node import ClusterError
from .cluster.waiting import WaitTimeout, wait_until

EXTERNAL_PORT = 9092
INTERNAL_PORT = 19092
CONTROLLER_PORT = 29093
DATA_DIR = "/var/lib/kafka/data"
#: Keys set per node from the cluster's topology; every other harness setting is shared.
_TOPOLOGY_KEYS = (
    "process.roles",
    "node.id",
    "controller.quorum.voters",
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "inter.broker.listener.name",
    "controller.listener.names",
    "log.dirs",
)
LABEL = "aiokafka-lead.cluster"


class KafkaContainerError(ClusterError):
    """A container did not start or get ready; the message carries its log tail."""


def broker_settings(brokers: int) -> dict[str, str]:
    """The jar harness's broker settings for a cluster of ``brokers`` nodes (replication
    factors, session timeouts, fetch backoffs, ...), without the topology keys."""
    ports = {nid: NodePorts(0, 0, {"PLAINTEXT": 0}) for nid in range(1, brokers + 1)}
    props = config.node_properties(
        1, ports, host="localhost", data_dir=Path(DATA_DIR), security=SecurityFiles(), profile="testing"
    )
    return {k: v for k, v in props.items() if k not in _TOPOLOGY_KEYS}


def env_name(prop: str) -> str:
    """The variable apache/kafka turns into ``prop``: ``log.dirs`` -> ``KAFKA_LOG_DIRS``,
    ``a_b`` -> ``KAFKA_A__B``, ``a-b`` -> ``KAFKA_A___B``."""
    return "KAFKA_" + prop.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def jvm_env() -> dict[str, str]:
    """The harness's small test JVM, as the image's JVM variables."""
    flags = config.jvm_flags(benchmark=False)
    return {
        "KAFKA_HEAP_OPTS": " ".join(f for f in flags if f.startswith("-Xm")),
        "KAFKA_JVM_PERFORMANCE_OPTS": " ".join(f for f in flags if not f.startswith("-Xm")),
    }


def ensure_reaper_usable() -> None:
    """testcontainers' reaper (Ryuk) is an image from a registry; where it cannot be had,
    run without it: every container and network here is removed by ``stop()``/``down()``."""
    if testcontainers_config.ryuk_disabled:
        return
    if not image_available(testcontainers_config.ryuk_image, pull=True):
        testcontainers_config.ryuk_disabled = True


def image_available(image: str, *, pull: bool) -> bool:
    """The image is in the engine (after pulling it, with ``pull``), via the Docker API."""
    images = DockerClient().client.images
    try:
        images.get(image)
        return True
    except docker.errors.ImageNotFound:
        pass
    if not pull:
        return False
    try:
        images.pull(image)
    except docker.errors.APIError:
        return False
    return True


def default_image() -> str:
    """``$KAFKA_IMAGE``; else the official image, unless it is not in the engine and the
    project's locally built one (``make kafka-image``) is: then that one."""
    explicit = os.environ.get(docker_engine.IMAGE_ENV, "").strip()
    if explicit:
        return explicit
    official = docker_engine.DEFAULT_IMAGE
    local = docker_engine.local_tag()
    if not image_available(official, pull=False) and image_available(local, pull=False):
        return local
    return official


def docker_host() -> str:
    """Where published ports are reached from this process (127.0.0.1 for a local engine)."""
    host = DockerClient().host()
    return "127.0.0.1" if host in ("localhost", "::1") else host


class KafkaContainer(DockerContainer):
    """One KRaft node (combined broker+controller) of an apache/kafka-style image.

    Alone it forms a single-node cluster on a network of its own; ``KafkaContainerCluster``
    creates several on one network. ``settings`` are broker properties (``{"num.partitions":
    "3"}``) passed as ``KAFKA_*`` variables.
    """

    def __init__(
        self,
        image: str | None = None,
        *,
        node_id: int = 1,
        voters: tuple[int, ...] = (1,),
        cluster_id: str | None = None,
        network: Network | None = None,
        host_port: int | None = None,
        settings: Mapping[str, str] | None = None,
        data_volume: str | None = None,
        labels: Mapping[str, str] | None = None,
        start_timeout: float = 120.0,
    ) -> None:
        super().__init__(image or default_image())
        self.node_id = node_id
        self.cluster_id = cluster_id or _new_cluster_id()
        self.alias = f"kafka-{node_id}"
        self.host = docker_host()
        self.host_port = host_port or config.free_ports(1, "127.0.0.1")[0]
        self.start_timeout = start_timeout
        self._own_network: Network | None = None if network else Network()
        self.with_network(network or self._own_network)  # type: ignore[arg-type]
        self._own_network_created = False
        self.with_network_aliases(self.alias)
        self.with_bind_ports(EXTERNAL_PORT, self.host_port)
        if data_volume:
            self.volumes[data_volume] = {"bind": DATA_DIR, "mode": "rw"}
        props = dict(broker_settings(len(voters)) if settings is None else settings)
        props.update(
            {
                "process.roles": "broker,controller",
                "node.id": str(node_id),
                "controller.quorum.voters": ",".join(
                    f"{v}@kafka-{v}:{CONTROLLER_PORT}" for v in voters
                ),
                "listeners": (
                    f"INTERNAL://0.0.0.0:{INTERNAL_PORT},CONTROLLER://0.0.0.0:{CONTROLLER_PORT},"
                    f"EXTERNAL://0.0.0.0:{EXTERNAL_PORT}"
                ),
                "advertised.listeners": (
                    f"INTERNAL://{self.alias}:{INTERNAL_PORT},"
                    f"EXTERNAL://{self.host}:{self.host_port}"
                ),
                "listener.security.protocol.map": (
                    "INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT"
                ),
                "inter.broker.listener.name": "INTERNAL",
                "controller.listener.names": "CONTROLLER",
                "log.dirs": DATA_DIR,
            }
        )
        self.with_env("CLUSTER_ID", self.cluster_id)
        for key, value in {**jvm_env(), **{env_name(k): v for k, v in props.items()}}.items():
            self.with_env(key, value)
        self._labels = {LABEL: self.cluster_id, **(labels or {})}

    # ------------------------------------------------------------------ lifecycle

    def start(self, *, wait: bool = True) -> KafkaContainer:
        """Create and start the container; with ``wait``, return once it serves clients."""
        ensure_reaper_usable()
        if self._own_network is not None and not self._own_network_created:
            self._own_network.create()
            self._own_network_created = True
        self._kwargs.setdefault("labels", self._labels)
        try:
            super().start()
        except Exception as exc:
            self._remove_own_network()
            hint = ""
            if not image_available(self.image, pull=False):
                hint = (
                    f"\n{self.image} is not available here; without a registry, build the "
                    f"project's image (`make kafka-image`) and set "
                    f"{docker_engine.IMAGE_ENV}={docker_engine.local_tag()}"
                )
            raise KafkaContainerError(
                f"node {self.node_id}: could not start {self.image}: {exc}{hint}"
            ) from exc
        if wait:
            try:
                wait_ready([self], self.start_timeout, f"node {self.node_id} to become ready")
            except BaseException:
                self.stop()
                raise
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        try:
            super().stop(force=force, delete_volume=delete_volume)
        finally:
            self._container = None
            self._remove_own_network()

    def _remove_own_network(self) -> None:
        if self._own_network is not None and self._own_network_created:
            self._own_network.remove()
            self._own_network_created = False

    # ------------------------------------------------------------------ addresses

    @property
    def network(self) -> Network:
        """The Docker network the node is on (its alias there is ``kafka-<id>``)."""
        assert self._network is not None
        return self._network

    def bootstrap_servers(self) -> str:
        """``host:port`` for clients on the Docker host."""
        return f"{self.host}:{self.host_port}"

    def internal_bootstrap_servers(self) -> str:
        """``kafka-<id>:19092`` for clients in other containers on the same network."""
        return f"{self.alias}:{INTERNAL_PORT}"

    # ------------------------------------------------------------------ state

    def is_running(self) -> bool:
        if self._container is None:
            return False
        self._container.reload()
        return bool(self._container.status == "running")

    def logs_tail(self, lines: int = 60) -> str:
        if self._container is None:
            return "(no container)"
        raw = self._container.logs(tail=lines)
        return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)

    def docker_container(self) -> Any:
        """The docker SDK container (for kill/stop/start without removing it)."""
        if self._container is None:
            raise KafkaContainerError(f"node {self.node_id} has no container")
        return self._container


def ready_problem(nodes: list[KafkaContainer]) -> str | None:
    """None when every node answers Metadata from the host listing every node at its
    advertised port; otherwise what is still missing. Raises if a node has exited."""
    for node in nodes:
        if not node.is_running():
            raise KafkaContainerError(
                f"node {node.node_id} ({node.image}) exited during startup.\n"
                f"--- docker logs (tail) ---\n{node.logs_tail()}"
            )
    return probe.cluster_not_ready({node.node_id: (node.host, node.host_port) for node in nodes})


def wait_ready(nodes: list[KafkaContainer], timeout: float, what: str) -> None:
    """Wait until ``ready_problem`` is None; on timeout raise with every node's log tail."""
    started = time.monotonic()
    last: list[str | None] = [None]

    def ready() -> bool:
        last[0] = ready_problem(nodes)
        return last[0] is None

    try:
        wait_until(ready, timeout, what, interval=0.25, max_interval=1.0)
    except WaitTimeout as exc:
        logs = "\n".join(
            f"--- node {n.node_id} docker logs (tail) ---\n{n.logs_tail()}" for n in nodes
        )
        raise KafkaContainerError(f"{exc} (last check: {last[0]})\n{logs}") from None
    jars.progress(f"ready: {what}", started)


class KafkaContainerCluster:
    """N KRaft nodes on one Docker network, with the ``KafkaCluster`` API the tests use
    (bootstrap, node control, Kafka's tools run on the host against the published ports)."""

    external = False
    ca_file: Path | None = None

    def __init__(
        self,
        brokers: int = 3,
        *,
        image: str | None = None,
        kafka_version: str = jars.DEFAULT_KAFKA_VERSION,
        settings: Mapping[str, str] | None = None,
        start_timeout: float = 180.0,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one node")
        self.image = image or default_image()
        self.kafka_version = kafka_version
        self.listeners = ("PLAINTEXT",)
        self.users: dict[str, str] = {}
        self.cluster_id = _new_cluster_id()
        self.start_timeout = start_timeout
        self._settings = dict(broker_settings(brokers) if settings is None else settings)
        self._tag = uuid.uuid4().hex[:8]
        self._voters = tuple(range(1, brokers + 1))
        self._network: Network | None = None
        self._volumes: dict[int, str] = {}
        self._nodes: dict[int, KafkaContainer] = {}
        self._client = DockerClient()

    # ------------------------------------------------------------------ lifecycle

    def up(self, timeout: float | None = None) -> KafkaContainerCluster:
        started = time.monotonic()
        ensure_reaper_usable()
        self._network = Network().create()
        ports = config.free_ports(len(self._voters), "127.0.0.1")
        jars.progress(f"starting {len(self._voters)} container(s) of {self.image}")
        try:
            for nid, port in zip(self._voters, ports, strict=True):
                name = f"aiokafka-lead-{self._tag}-kafka-{nid}"
                self._client.client.volumes.create(name, labels={LABEL: self.cluster_id})
                self._volumes[nid] = name
                self._nodes[nid] = self._new_node(nid, port)
                self._nodes[nid].start(wait=False)
            wait_ready(
                list(self._nodes.values()),
                timeout or self.start_timeout,
                f"{len(self._nodes)} container node(s) to become ready",
            )
        except BaseException:
            self.down()
            raise
        jars.progress(f"cluster up: {self.bootstrap()}", started)
        return self

    def down(self) -> None:
        """Remove every container, volume and the network (nothing is left behind)."""
        for node in self._nodes.values():
            node.stop()
        for name in self._volumes.values():
            try:
                self._client.client.volumes.get(name).remove(force=True)
            except Exception as exc:  # already gone: nothing to clean
                jars.progress(f"volume {name}: {exc}")
        self._volumes.clear()
        if self._network is not None:
            self._network.remove()
            self._network = None

    def __enter__(self) -> KafkaContainerCluster:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    def _new_node(self, nid: int, host_port: int) -> KafkaContainer:
        return KafkaContainer(
            self.image,
            node_id=nid,
            voters=self._voters,
            cluster_id=self.cluster_id,
            network=self._network,
            host_port=host_port,
            settings=self._settings,
            data_volume=self._volumes[nid],
            start_timeout=self.start_timeout,
        )

    # ------------------------------------------------------------------ addresses

    @property
    def node_ids(self) -> list[int]:
        return sorted(self._nodes)

    def node(self, node_id: int) -> KafkaContainer:
        try:
            return self._nodes[node_id]
        except KeyError:
            raise ClusterError(f"no node {node_id} (nodes are {self.node_ids})") from None

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        if listener.upper() != "PLAINTEXT":
            raise ClusterError(
                f"the Docker cluster serves PLAINTEXT only, not {listener.upper()} "
                "(the jar harness's KafkaCluster has every security listener)"
            )
        return ",".join(self._nodes[nid].bootstrap_servers() for nid in self.node_ids)

    def internal_bootstrap(self) -> str:
        """Addresses for clients running in containers on the cluster's network."""
        return ",".join(self._nodes[nid].internal_bootstrap_servers() for nid in self.node_ids)

    @property
    def network_name(self) -> str:
        if self._network is None:
            raise ClusterError("the cluster is not up")
        return self._network.name

    def ports(self, node_id: int) -> NodePorts:
        node = self.node(node_id)
        return NodePorts(CONTROLLER_PORT, INTERNAL_PORT, {"PLAINTEXT": node.host_port})

    def logs(self, node_id: int, lines: int = 200) -> str:
        return self.node(node_id).logs_tail(lines)

    # ------------------------------------------------------------------ node control

    def is_running(self, node_id: int) -> bool:
        return self.node(node_id).is_running()

    def is_up(self) -> bool:
        nodes = list(self._nodes.values())
        try:
            return all(n.is_running() for n in nodes) and ready_problem(nodes) is None
        except KafkaContainerError:
            return False

    def stop_node(self, node_id: int, timeout: float = 60.0) -> None:
        """``docker stop``: SIGTERM, so controlled shutdown moves the node's leaderships."""
        self.node(node_id).docker_container().stop(timeout=int(timeout))

    def kill_node(self, node_id: int) -> None:
        """``docker kill``: SIGKILL; its leaderships move once its session times out."""
        container = self.node(node_id).docker_container()
        container.kill()
        wait_until(lambda: not self.is_running(node_id), 30, f"node {node_id} to die")

    def start_node(self, node_id: int, timeout: float = 90.0) -> None:
        """Start a stopped node (same container, same port) and wait until all see it."""
        if self.is_running(node_id):
            raise ClusterError(f"node {node_id} is already running")
        self.node(node_id).docker_container().start()
        self._wait_running(timeout, f"node {node_id} to rejoin")

    def restart_node(self, node_id: int, *, new_port: bool = False, timeout: float = 90.0) -> None:
        """Graceful restart; with ``new_port`` the node comes back in a new container (same
        data volume) published on a fresh host port (the KIP-951 new-endpoint case)."""
        self.stop_node(node_id)
        if not new_port:
            self.start_node(node_id, timeout)
            return
        old = self.node(node_id)
        taken = {n.host_port for n in self._nodes.values()}
        fresh = next(p for p in config.free_ports(len(taken) + 1, "127.0.0.1") if p not in taken)
        old.stop()
        self._nodes[node_id] = self._new_node(node_id, fresh)
        self._nodes[node_id].start(wait=False)
        self._wait_running(timeout, f"node {node_id} to rejoin on port {fresh}")

    def _wait_running(self, timeout: float, what: str) -> None:
        running = [n for n in self._nodes.values() if n.is_running()]
        wait_ready(running, timeout, what)

    def run_tool(
        self, main_class: str, *args: str, timeout: float = 120.0, check: bool = True
    ) -> str:
        """Run a Kafka tool main class on the host (the harness's jars) against the
        published ports; pass ``--bootstrap-server cluster.bootstrap()`` yourself."""
        return tools.run_tool(self.kafka_version, main_class, *args, timeout=timeout, check=check)

