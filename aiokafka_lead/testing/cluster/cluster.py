"""``KafkaCluster``: a real KRaft cluster of combined broker+controller JVMs on 127.0.0.1.

All state needed to find the cluster again (ports, pids, start markers, security files)
lives in ``<dir>/cluster.json``, so a cluster started by one CLI invocation can be
inspected, disturbed and torn down by later ones.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config, jars, node, probe, security, tools
from .config import NodePorts, SecurityFiles
from .node import ClusterError
from .waiting import WaitTimeout, wait_until

STATE_FILE = "cluster.json"
_STATE_FORMAT = 1


@dataclass(frozen=True)
class NodeStatus:
    """What ``status()`` reports per node."""

    node_id: int
    pid: int | None
    running: bool
    ports: NodePorts


@dataclass
class _Node:
    node_id: int
    ports: NodePorts
    pid: int | None = None
    marker: str | None = None


def _new_cluster_id() -> str:
    """Kafka cluster ids are a UUID in unpadded URL-safe base64 (22 chars), never starting
    with "-": the storage tool would parse ``-t -abc...`` as an option (1 cluster in 64
    failed to format). Kafka's own ``Uuid.randomUuid()`` skips those ids too."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


class KafkaCluster:
    """A local Kafka cluster this process (or an earlier one) started in ``directory``."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        brokers: int = 3,
        *,
        kafka_version: str = jars.DEFAULT_KAFKA_VERSION,
        listeners: Iterable[str] = ("PLAINTEXT",),
        sasl_mechanisms: Iterable[str] = config.DEFAULT_SASL_MECHANISMS,
        users: dict[str, str] | None = None,
        benchmark: bool = False,
        host: str = "127.0.0.1",
        profile: str = config.DEFAULT_PROFILE,
        extra_properties: dict[str, str] | None = None,
        node_properties: dict[int, dict[str, str]] | None = None,
        proxied: bool = False,
        request_log: bool = False,
        stop_at_exit: bool = False,
        oauth_jwks_url: str | None = None,
        oauth_audience: str | None = None,
        oauth_issuer: str | None = None,
        kerberos_keytab: str | os.PathLike[str] | None = None,
        kerberos_principal: str | None = None,
        jvm_properties: dict[str, str] | None = None,
        classpath: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        """``profile`` names the broker settings on top of Kafka's defaults
        (``config.PROFILES``); ``extra_properties`` override single settings on every node,
        ``node_properties`` ({node id: settings}) on one node (``broker.rack``, say). With
        ``proxied`` every node gets one more PLAINTEXT listener, ``PROXIED``, advertised at a
        port of its own where something in between (``aiokafka_lead.testing.netem``) must
        forward to the listener's real port (``ports(n).client["PROXIED"]``). ``request_log``
        writes every request with its timings to ``logs/requests.log`` of each node.
        ``oauth_jwks_url``: with "OAUTHBEARER" among ``sasl_mechanisms``, the SASL listeners
        check signed JWTs against this JWKS endpoint (and ``oauth_audience`` and
        ``oauth_issuer``, the ``aud`` and ``iss`` they must name); without it Kafka's
        unsecured validator takes unsigned tokens. With "GSSAPI": the broker's
        ``kerberos_keytab`` and ``kerberos_principal`` (``service/host@REALM``); the KDC is
        found through ``jvm_properties`` (``{"java.security.krb5.conf": path}``), system
        properties given to every node's JVM. ``classpath``: more directories or jars for the
        brokers' JVMs (a broker plugin, e.g. a client telemetry receiver named in
        ``extra_properties``)."""
        if brokers < 1:
            raise ValueError("a cluster needs at least one node")
        self.directory = Path(directory).resolve()
        self.kafka_version = kafka_version
        self.listeners = config.expected_listeners(listeners)
        self.sasl_mechanisms = tuple(m.upper() for m in sasl_mechanisms)
        self.users: dict[str, str] = dict(users or security.DEFAULT_USERS)
        self.benchmark = benchmark
        self.host = host
        config.profile_settings(profile, brokers)  # unknown names fail here, not at up()
        self.profile = profile
        self.extra_properties: dict[str, str] = dict(extra_properties or {})
        self.node_properties: dict[int, dict[str, str]] = {
            int(k): dict(v) for k, v in (node_properties or {}).items()
        }
        unknown = sorted(set(self.node_properties) - set(range(1, brokers + 1)))
        if unknown:
            raise ValueError(f"node_properties for nodes {unknown}: the nodes are 1..{brokers}")
        self.proxied = proxied
        self.request_log = request_log
        self.oauth_jwks_url = oauth_jwks_url
        self.oauth_audience = oauth_audience
        self.oauth_issuer = oauth_issuer
        self.kerberos_keytab = None if kerberos_keytab is None else Path(kerberos_keytab)
        self.kerberos_principal = kerberos_principal
        self.jvm_properties: dict[str, str] = dict(jvm_properties or {})
        self.classpath = [str(Path(p).resolve()) for p in classpath]
        self.cluster_id = _new_cluster_id()
        self.ca_file: Path | None = None
        self._keystore: Path | None = None
        self._nodes: dict[int, _Node] = {
            nid: _Node(nid, NodePorts(0, 0)) for nid in range(1, brokers + 1)
        }
        self._lock = threading.RLock()
        self._stop_at_exit = stop_at_exit

    # ------------------------------------------------------------------ state file

    @classmethod
    def attach(cls, directory: str | os.PathLike[str]) -> KafkaCluster:
        """Find a cluster again from the state file an earlier ``up()`` wrote."""
        path = Path(directory).resolve() / STATE_FILE
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            raise ClusterError(f"no cluster state in {path.parent} (run `up` first)") from None
        if state.get("format") != _STATE_FORMAT:
            raise ClusterError(f"{path} was written by an incompatible version")
        self = cls(
            path.parent,
            len(state["nodes"]),
            kafka_version=state["kafka_version"],
            listeners=state["listeners"],
            sasl_mechanisms=state["sasl_mechanisms"],
            users=state["users"],
            benchmark=state["benchmark"],
            host=state["host"],
            extra_properties=state.get("extra_properties", {}),  # absent before this option existed
            node_properties={int(k): v for k, v in state.get("node_properties", {}).items()},
            profile=state.get("profile", "testing"),  # every cluster ran the testing one before
            proxied=state.get("proxied", False),
            oauth_jwks_url=state.get("oauth_jwks_url"),
            oauth_audience=state.get("oauth_audience"),
            oauth_issuer=state.get("oauth_issuer"),
            kerberos_keytab=state.get("kerberos_keytab"),
            kerberos_principal=state.get("kerberos_principal"),
            jvm_properties=state.get("jvm_properties", {}),
        )
        self.cluster_id = state["cluster_id"]
        self.ca_file = Path(state["ca_file"]) if state["ca_file"] else None
        self._keystore = Path(state["keystore"]) if state["keystore"] else None
        for key, raw in state["nodes"].items():
            ports = NodePorts(
                raw["controller"], raw["internal"], dict(raw["client"]), dict(raw.get("advertised", {}))
            )
            self._nodes[int(key)] = _Node(int(key), ports, raw["pid"], raw["marker"])
        return self

    def _save(self) -> None:
        """Write the state file atomically (readers never see half a JSON document)."""
        state: dict[str, Any] = {
            "format": _STATE_FORMAT,
            "kafka_version": self.kafka_version,
            "cluster_id": self.cluster_id,
            "host": self.host,
            "listeners": list(self.listeners),
            "sasl_mechanisms": list(self.sasl_mechanisms),
            "users": self.users,
            "benchmark": self.benchmark,
            "extra_properties": self.extra_properties,
            "node_properties": {str(k): v for k, v in self.node_properties.items()},
            "profile": self.profile,
            "proxied": self.proxied,
            "oauth_jwks_url": self.oauth_jwks_url,
            "oauth_audience": self.oauth_audience,
            "oauth_issuer": self.oauth_issuer,
            "kerberos_keytab": str(self.kerberos_keytab) if self.kerberos_keytab else None,
            "kerberos_principal": self.kerberos_principal,
            "jvm_properties": self.jvm_properties,
            "ca_file": str(self.ca_file) if self.ca_file else None,
            "keystore": str(self._keystore) if self._keystore else None,
            "nodes": {
                str(n.node_id): {
                    "controller": n.ports.controller,
                    "internal": n.ports.internal,
                    "client": n.ports.client,
                    "advertised": n.ports.advertised,
                    "pid": n.pid,
                    "marker": n.marker,
                }
                for n in self._nodes.values()
            },
        }
        tmp = self.directory / f".{STATE_FILE}.tmp"
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(self.directory / STATE_FILE)

    # ------------------------------------------------------------------ public API

    @property
    def node_ids(self) -> list[int]:
        return sorted(self._nodes)

    @property
    def libs(self) -> Path:
        return jars.libs_dir(self.kafka_version)

    def node_dir(self, node_id: int) -> Path:
        return self.directory / f"node-{node_id}"

    def log_file(self, node_id: int) -> Path:
        """The broker's own log (written by the log4j config generated for it)."""
        return self.node_dir(node_id) / "logs" / "server.log"

    def ports(self, node_id: int) -> NodePorts:
        return self._node(node_id).ports

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        """``host:port,...`` of every node on ``listener`` (a client listener name)."""
        name = listener.upper()
        if name not in self.listeners and not (self.proxied and name == config.PROXIED_LISTENER):
            raise ClusterError(f"listener {name} not enabled (have {', '.join(self.listeners)})")
        return ",".join(
            f"{self.host}:{self._nodes[nid].ports.advertised_port(name)}" for nid in self.node_ids
        )

    def non_default_settings(self) -> dict[str, str]:
        """Every broker setting of this cluster that differs from Kafka's defaults (the
        profile's and ``extra_properties``), structural ones (listeners, quorum) aside."""
        props = config.node_properties(
            self.node_ids[0],
            {n.node_id: n.ports for n in self._nodes.values()},
            host=self.host,
            data_dir=self.node_dir(self.node_ids[0]),
            security=self._security_files(),
            profile=self.profile,
        )
        return {**config.non_default_settings(props), **self.extra_properties}

    def is_running(self, node_id: int) -> bool:
        n = self._node(node_id)
        return node.is_ours(n.pid, n.marker)

    def status(self) -> list[NodeStatus]:
        return [
            NodeStatus(n.node_id, n.pid, node.is_ours(n.pid, n.marker), n.ports)
            for n in (self._nodes[i] for i in self.node_ids)
        ]

    def is_up(self) -> bool:
        """Every node running, registered and answering Metadata with everyone's port."""
        return all(s.running for s in self.status()) and self._ready_problem() is None

    def up(self, timeout: float = 90.0) -> KafkaCluster:
        """Provision jars, write configs, format storage, start every node, wait for ready."""
        with self._lock:
            self._refuse_if_running()
            started = time.monotonic()
            jars.provision(self.kafka_version)
            self._prepare_fresh_dir()
            self._format_all()
            jars.progress(f"starting {len(self._nodes)} node(s) of Kafka {self.kafka_version}")
            if self._stop_at_exit:
                atexit.register(self._down_quietly)
            try:
                for nid in self.node_ids:
                    self._spawn(nid)
                self._wait_ready(timeout, f"{len(self._nodes)} node(s) to become ready")
            except BaseException:
                self.down(grace=5.0)
                raise
            jars.progress(f"cluster up: {self.bootstrap(self.listeners[0])}", started)
            return self

    def down(self, grace: float = 5.0) -> None:
        """SIGTERM every node, SIGKILL what is left after ``grace`` seconds.

        The grace is short on purpose: when every node of a KRaft cluster shuts down at
        once, the last brokers can wait a long time for a controller that is gone, and
        the data of a test cluster is throwaway anyway."""
        with self._lock:
            live = [n for n in self._nodes.values() if node.is_ours(n.pid, n.marker)]
            for n in live:
                node.send_signal(n.pid, n.marker, signal.SIGTERM)
            deadline = time.monotonic() + grace
            for n in live:
                if not node.wait_exit(n.pid, n.marker, max(0.0, deadline - time.monotonic())):
                    node.send_signal(n.pid, n.marker, signal.SIGKILL)
            for n in live:
                if not node.wait_exit(n.pid, n.marker, 30.0):
                    raise ClusterError(f"node {n.node_id} (pid {n.pid}) survived SIGKILL")
            for n in self._nodes.values():
                n.pid = n.marker = None
            if (self.directory / STATE_FILE).exists():
                self._save()

    def stop_node(self, node_id: int, timeout: float = 60.0) -> None:
        """Graceful stop (SIGTERM): controlled shutdown moves the node's leaderships away."""
        with self._lock:
            n = self._node(node_id)
            if not node.terminate(n.pid, n.marker, timeout):
                jars.progress(f"node {node_id} ignored SIGTERM for {timeout:.0f}s; killed it")
            n.pid = n.marker = None
            self._save()

    def kill_node(self, node_id: int) -> None:
        """Crash a node (SIGKILL): its leaderships only move once its session times out."""
        with self._lock:
            n = self._node(node_id)
            node.send_signal(n.pid, n.marker, signal.SIGKILL)
            if not node.wait_exit(n.pid, n.marker, 30.0):
                raise ClusterError(f"node {node_id} (pid {n.pid}) survived SIGKILL")
            n.pid = n.marker = None
            self._save()

    def start_node(self, node_id: int, timeout: float = 90.0) -> None:
        """Start a stopped node and wait until every running node sees it."""
        with self._lock:
            if self.is_running(node_id):
                raise ClusterError(f"node {node_id} is already running")
            self._write_node_config(node_id)
            self._spawn(node_id)
            self._wait_ready(timeout, f"node {node_id} to rejoin")

    def restart_node(self, node_id: int, *, new_port: bool = False, timeout: float = 90.0) -> None:
        """Graceful restart; with ``new_port`` every client listener moves to a fresh port
        while the controller port stays (the KIP-951 "leader moved to a new endpoint" case)."""
        with self._lock:
            self.stop_node(node_id)
            if new_port:
                ports = self._node(node_id).ports
                taken = {p for other in self._nodes.values() for p in other.ports.all()}
                candidates = config.free_ports(len(ports.client) + len(taken), self.host)
                fresh = [p for p in candidates if p not in taken]
                ports.client = dict(zip(ports.client, fresh, strict=False))
                self._save()
            self.start_node(node_id, timeout)

    def run_tool(
        self, main_class: str, *args: str, timeout: float = 120.0, check: bool = True
    ) -> str:
        """Run a Kafka tool main class (e.g. ``org.apache.kafka.tools.TopicCommand``) with
        the cluster's jars and return its stdout. Pass ``--bootstrap-server`` yourself."""
        return tools.run_tool(self.kafka_version, main_class, *args, timeout=timeout, check=check)

    def client_config_file(
        self,
        listener: str = "PLAINTEXT",
        *,
        mechanism: str = "SCRAM-SHA-256",
        user: str | None = None,
        password: str | None = None,
    ) -> Path:
        """Write a Java client config for ``listener`` (pass it to tools as
        ``--command-config``); SASL defaults to the first user and its real password."""
        name = listener.upper()
        if name not in self.listeners:
            raise ClusterError(f"listener {name} not enabled (have {', '.join(self.listeners)})")
        user = user or next(iter(self.users))
        if password is None:
            password = self.users.get(user, "")
        props = security.java_client_properties(
            name,
            ca_file=self.ca_file,
            mechanism=mechanism if name.startswith("SASL_") else None,
            user=user,
            password=password,
        )
        path = self.directory / "clients" / f"{name.lower()}-{mechanism.lower()}-{user}.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config.render_properties(props))
        return path

    def __enter__(self) -> KafkaCluster:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    # ------------------------------------------------------------------ internals

    def _node(self, node_id: int) -> _Node:
        try:
            return self._nodes[node_id]
        except KeyError:
            raise ClusterError(f"no node {node_id} (nodes are {self.node_ids})") from None

    def _down_quietly(self) -> None:
        try:
            self.down(grace=5.0)
        except Exception as exc:
            jars.progress(f"could not stop the cluster in {self.directory}: {exc}")

    def _refuse_if_running(self) -> None:
        if not (self.directory / STATE_FILE).exists():
            return
        try:
            previous = KafkaCluster.attach(self.directory)
        except (ClusterError, KeyError, ValueError):
            return
        alive = [s.node_id for s in previous.status() if s.running]
        if alive:
            raise ClusterError(
                f"a cluster is already running in {self.directory} (nodes {alive}); "
                "run `down` first"
            )

    def _prepare_fresh_dir(self) -> None:
        """Remove what an earlier cluster left in the dir, pick ports, write configs."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for old in self.directory.glob("node-*"):
            shutil.rmtree(old)
        shutil.rmtree(self.directory / "security", ignore_errors=True)
        per_node = 2 + len(self.listeners) + (2 if self.proxied else 0)
        ports = iter(config.free_ports(per_node * len(self._nodes), self.host))
        for n in self._nodes.values():
            n.ports = NodePorts(
                next(ports), next(ports), {name: next(ports) for name in self.listeners}
            )
            if self.proxied:
                n.ports.client[config.PROXIED_LISTENER] = next(ports)
                n.ports.advertised[config.PROXIED_LISTENER] = next(ports)
            n.pid = n.marker = None
        if any("SSL" in name for name in self.listeners):
            tls = security.generate_tls(self.directory / "security", (self.host, "localhost"))
            self.ca_file, self._keystore = tls.ca_cert, tls.server_keystore
        for nid in self.node_ids:
            self._write_node_config(nid)
        self._save()

    def _security_files(self) -> SecurityFiles:
        return SecurityFiles(
            keystore=self._keystore,
            truststore=self.ca_file,
            users=self.users,
            sasl_mechanisms=self.sasl_mechanisms,
            oauth_jwks_url=self.oauth_jwks_url,
            oauth_audience=self.oauth_audience,
            oauth_issuer=self.oauth_issuer,
            kerberos_keytab=self.kerberos_keytab,
            kerberos_principal=self.kerberos_principal,
        )

    def _write_node_config(self, node_id: int) -> None:
        ndir = self.node_dir(node_id)
        (ndir / "logs").mkdir(parents=True, exist_ok=True)
        props = config.node_properties(
            node_id,
            {n.node_id: n.ports for n in self._nodes.values()},
            host=self.host,
            data_dir=ndir / "data",
            security=self._security_files(),
            profile=self.profile,
        )
        props.update(self.extra_properties)
        props.update(self.node_properties.get(node_id, {}))
        (ndir / "node.properties").write_text(config.render_properties(props))
        name, text, _ = config.logging_config(
            self.kafka_version, self.log_file(node_id), request_log=self.request_log
        )
        (ndir / name).write_text(text)

    def _format_all(self) -> None:
        extra: list[str] = []
        if any(name.startswith("SASL_") for name in self.listeners):
            extra = security.scram_format_args(self.users, self.sasl_mechanisms)
        configs = {nid: self.node_dir(nid) / "node.properties" for nid in self.node_ids}
        tools.format_storage(self.kafka_version, self.cluster_id, configs, extra)

    def _spawn(self, node_id: int) -> None:
        n = self._node(node_id)
        busy = [p for p in n.ports.all() if not config.port_is_free(p, self.host)]
        if busy:
            raise ClusterError(f"node {node_id}: port(s) {busy} already in use; refusing to start")
        ndir = self.node_dir(node_id)
        log_name, _, log_flag = config.logging_config(self.kafka_version, self.log_file(node_id))
        marker = node.new_marker(self.directory, node_id)
        cmd = [
            node.java_executable(),
            *config.jvm_flags(benchmark=self.benchmark),
            "-Djava.awt.headless=true",
            log_flag.format(path=ndir / log_name),
            f"-Dkafka.logs.dir={ndir / 'logs'}",
            node.marker_flag(marker),
            *([f"-D{config.OAUTH_ALLOWED_URLS}={self.oauth_jwks_url}"] if self.oauth_jwks_url else []),
            *(f"-D{key}={value}" for key, value in self.jvm_properties.items()),
            "-cp",
            os.pathsep.join([node.classpath(self.libs), *self.classpath]),
            "kafka.Kafka",
            str(ndir / "node.properties"),
        ]
        n.pid = node.spawn(cmd, cwd=ndir, output=ndir / "logs" / "stdout.log")
        n.marker = marker
        self._save()

    def _probe_listener(self) -> str | None:
        """Probe on the PLAINTEXT client listener if any (so client ports are checked),
        otherwise on the always-plaintext internal one."""
        return "PLAINTEXT" if "PLAINTEXT" in self.listeners else None

    def _probe_port(self, ports: NodePorts) -> int:
        listener = self._probe_listener()
        return ports.client[listener] if listener else ports.internal

    def _ready_problem(self) -> str | None:
        """None when every started node answers Metadata listing every started node on
        its current port; otherwise a description of what is still missing."""
        started = [n for n in self._nodes.values() if n.pid is not None]
        return probe.cluster_not_ready(
            {n.node_id: (self.host, self._probe_port(n.ports)) for n in started}
        )

    def _check_alive(self) -> None:
        """Fail fast, with the log tail, when a node we started has exited."""
        for n in self._nodes.values():
            if n.pid is not None and not node.is_ours(n.pid, n.marker):
                ndir = self.node_dir(n.node_id)
                log = node.tail(self.log_file(n.node_id))
                out = node.tail(ndir / "logs" / "stdout.log", 20)
                n.pid = n.marker = None
                self._save()
                raise ClusterError(
                    f"node {n.node_id} exited during startup.\n"
                    f"--- {self.log_file(n.node_id)} (tail) ---\n{log}\n"
                    f"--- stdout/stderr (tail) ---\n{out}"
                )

    def _wait_ready(self, timeout: float, what: str) -> None:
        started = time.monotonic()
        last_report = started
        last_problem: list[str | None] = [None]

        def ready() -> bool:
            nonlocal last_report
            self._check_alive()
            problem = self._ready_problem()
            last_problem[0] = problem
            if problem and time.monotonic() - last_report >= 10:
                last_report = time.monotonic()
                jars.progress(f"waiting: {problem}", started)
            return problem is None

        try:
            wait_until(ready, timeout, what, interval=0.2, max_interval=0.5)
        except WaitTimeout as exc:
            raise ClusterError(f"{exc} (last check: {last_problem[0]})") from None
        jars.progress(f"ready: {what}", started)
