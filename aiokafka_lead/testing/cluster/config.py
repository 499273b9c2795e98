"""Per-node configuration: ports, ``node.properties``, logging config and JVM flags.

Everything here is pure (no processes, no network) so the layout of a node is easy to
read in one place. Settings favour fast, predictable tests over production realism.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .jars import uses_log4j2

#: Client-facing listener names; each is named after its security protocol.
CLIENT_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Inter-broker and controller traffic always stays on internal PLAINTEXT listeners.
INTERNAL_LISTENER = "INTERNAL"
CONTROLLER_LISTENER = "CONTROLLER"
DEFAULT_SASL_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")


@dataclass
class NodePorts:
    """Ports of one node; ``client`` maps listener name to port and may change on restart."""

    controller: int
    internal: int
    client: dict[str, int] = field(default_factory=dict)

    def all(self) -> list[int]:
        return [self.controller, self.internal, *self.client.values()]


@dataclass(frozen=True)
class SecurityFiles:
    """PEM files and SASL users the broker config refers to (see ``security.py``)."""

    keystore: Path | None = None
    truststore: Path | None = None
    users: Mapping[str, str] = field(default_factory=dict)
    sasl_mechanisms: tuple[str, ...] = DEFAULT_SASL_MECHANISMS


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct free ports *below* the kernel's ephemeral range.

    Ports the kernel hands out for port 0 come from the ephemeral range, which outgoing
    connections also use: a stopped node's port could then be taken by some client
    socket before the node restarts on it. Ports below that range are only ever taken
    by explicit binds, so a node can reliably get its port back.
    """
    low, _ = _ephemeral_range()
    lowest = 10000
    chosen: list[int] = []
    if low - lowest >= 1000:
        rng = random.SystemRandom()
        for _ in range(count * 50):
            port = rng.randrange(lowest, low)
            if port not in chosen and port_is_free(port, host, reuse=False):
                chosen.append(port)
                if len(chosen) == count:
                    return chosen
    # Fallback: let the kernel choose (holding every socket so the ports are distinct).
    socks: list[socket.socket] = []
    try:
        for _ in range(count - len(chosen)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return chosen + [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_is_free(port: int, host: str = "127.0.0.1", *, reuse: bool = True) -> bool:
    """True if a listener could bind ``port``. With ``reuse`` (SO_REUSEADDR, as the JVM
    does) TIME_WAIT leftovers of a node's previous run do not count as busy."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        if reuse:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def quorum_voters(ports: Mapping[int, NodePorts], host: str) -> str:
    """Static voters string; controller ports never change so this never needs rewriting."""
    return ",".join(f"{nid}@{host}:{p.controller}" for nid, p in sorted(ports.items()))


def node_properties(
    node_id: int,
    ports: Mapping[int, NodePorts],
    *,
    host: str,
    data_dir: Path,
    security: SecurityFiles,
) -> dict[str, str]:
    """The full ``node.properties`` of one combined broker+controller node."""
    own = ports[node_id]
    n = len(ports)
    rf = str(min(3, n))
    min_isr = str(min(2, n))
    listeners = [
        f"{INTERNAL_LISTENER}://{host}:{own.internal}",
        f"{CONTROLLER_LISTENER}://{host}:{own.controller}",
        *(f"{name}://{host}:{port}" for name, port in own.client.items()),
    ]
    advertised = [
        f"{INTERNAL_LISTENER}://{host}:{own.internal}",
        *(f"{name}://{host}:{port}" for name, port in own.client.items()),
    ]
    protocol_map = [f"{INTERNAL_LISTENER}:PLAINTEXT", f"{CONTROLLER_LISTENER}:PLAINTEXT"]
    protocol_map += [f"{name}:{name}" for name in own.client]
    props: dict[str, str] = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": quorum_voters(ports, host),
        "listeners": ",".join(listeners),
        "advertised.listeners": ",".join(advertised),
        "listener.security.protocol.map": ",".join(protocol_map),
        "inter.broker.listener.name": INTERNAL_LISTENER,
        "controller.listener.names": CONTROLLER_LISTENER,
        "log.dirs": str(data_dir),
        # Test-friendly behaviour: leadership only moves when a test makes it move.
        "auto.leader.rebalance.enable": "false",
        "controlled.shutdown.enable": "true",
        "broker.session.timeout.ms": "6000",
        "broker.heartbeat.interval.ms": "1000",
        "group.initial.rebalance.delay.ms": "0",
        # KIP-848 groups: a killed member expires in 10 s, not 45 (Kafka's minimum is lowered)
        "group.consumer.session.timeout.ms": "10000",
        "group.consumer.min.session.timeout.ms": "6000",
        "default.replication.factor": rf,
        "min.insync.replicas": "1",
        "num.partitions": "1",
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": min_isr,
        "share.coordinator.state.topic.num.partitions": "5",
        "log.cleaner.dedupe.buffer.size": "2097152",
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "log.flush.interval.messages": "9223372036854775807",
        # After a leader move, a follower that learns the new epoch before the new leader
        # does is refused (UNKNOWN_LEADER_EPOCH) and backs off replica.fetch.backoff.ms
        # (default 1 s), sometimes twice; until it fetches, acks=all produces to that leader
        # wait, and its other followers' fetches idle up to replica.fetch.wait.max.ms
        # (500 ms). Traced as the 1-2 s stalls of ~5% of moves on loopback, for every
        # client alike; 100 ms each removed them (docs/benchmarks.md).
        "replica.fetch.backoff.ms": "100",
        "replica.fetch.wait.max.ms": "100",
    }
    if any(name in ("SSL", "SASL_SSL") for name in own.client):
        assert security.keystore is not None and security.truststore is not None
        props.update(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(security.keystore),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(security.truststore),
                "ssl.client.auth": "none",
            }
        )
    sasl_listeners = [name for name in own.client if name.startswith("SASL_")]
    if sasl_listeners:
        mechanisms = ",".join(security.sasl_mechanisms)
        props["sasl.enabled.mechanisms"] = mechanisms
        plain_users = " ".join(f'user_{u}="{p}"' for u, p in security.users.items())
        for name in sasl_listeners:
            prefix = f"listener.name.{name.lower()}"
            props[f"{prefix}.sasl.enabled.mechanisms"] = mechanisms
            for mech in security.sasl_mechanisms:
                if mech.startswith("SCRAM-"):
                    module = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                elif mech == "PLAIN":
                    module = (
                        "org.apache.kafka.common.security.plain.PlainLoginModule required "
                        f"{plain_users};"
                    )
                else:
                    raise ValueError(f"unsupported SASL mechanism {mech!r}")
                props[f"{prefix}.{mech.lower()}.sasl.jaas.config"] = module
    return props


def render_properties(props: Mapping[str, str]) -> str:
    """Java properties text; values here never contain backslashes or newlines."""
    lines = ["# written by aiokafka_lead.testing.cluster; rewritten on every start"]
    for key, value in props.items():
        if "\\" in value or "\n" in value:
            raise ValueError(f"cannot write {key}={value!r} as a property")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def logging_config(version: str, log_file: Path) -> tuple[str, str, str]:
    """(file name, contents, JVM flag) of a logging config writing to ``log_file``.

    Kafka 4.x logs through log4j2; 3.x through reload4j (log4j 1 syntax).
    """
    pattern = "[%d] %p %m (%c)%n"
    if uses_log4j2(version):
        text = "\n".join(
            [
                "status = warn",
                "appender.file.type = File",
                "appender.file.name = FILE",
                f"appender.file.fileName = {log_file}",
                "appender.file.layout.type = PatternLayout",
                f"appender.file.layout.pattern = {pattern}",
                "rootLogger.level = INFO",
                "rootLogger.appenderRef.file.ref = FILE",
                "logger.statechange.name = state.change.logger",
                "logger.statechange.level = WARN",
                "",
            ]
        )
        return "log4j2.properties", text, "-Dlog4j2.configurationFile={path}"
    text = "\n".join(
        [
            "log4j.rootLogger=INFO, file",
            "log4j.appender.file=org.apache.log4j.FileAppender",
            f"log4j.appender.file.File={log_file}",
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
            f"log4j.appender.file.layout.ConversionPattern={pattern}",
            "log4j.logger.state.change.logger=WARN",
            "",
        ]
    )
    return "log4j.properties", text, "-Dlog4j.configuration=file:{path}"


def tool_logging_config(version: str) -> tuple[str, str, str]:
    """Logging config for tool JVMs: warnings only, on stderr, so stdout is the output."""
    if uses_log4j2(version):
        text = "\n".join(
            [
                "status = warn",
                "appender.err.type = Console",
                "appender.err.name = STDERR",
                "appender.err.target = SYSTEM_ERR",
                "appender.err.layout.type = PatternLayout",
                "appender.err.layout.pattern = [%d] %p %m (%c)%n",
                "rootLogger.level = WARN",
                "rootLogger.appenderRef.err.ref = STDERR",
                "",
            ]
        )
        return "tools-log4j2.properties", text, "-Dlog4j2.configurationFile={path}"
    text = "\n".join(
        [
            "log4j.rootLogger=WARN, stderr",
            "log4j.appender.stderr=org.apache.log4j.ConsoleAppender",
            "log4j.appender.stderr.Target=System.err",
            "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n",
            "",
        ]
    )
    return "tools-log4j.properties", text, "-Dlog4j.configuration=file:{path}"


def jvm_flags(*, benchmark: bool) -> list[str]:
    """A small, quick-starting JVM for tests; a production-like one for benchmarks."""
    if benchmark:
        return ["-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"]
    return ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


TOOL_JVM_FLAGS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def expected_listeners(names: Iterable[str]) -> tuple[str, ...]:
    """Validate and normalise the requested client listeners (order kept, deduplicated)."""
    out: list[str] = []
    for name in names:
        upper = name.upper()
        if upper not in CLIENT_PROTOCOLS:
            raise ValueError(f"unknown listener {name!r}; choose from {CLIENT_PROTOCOLS}")
        if upper not in out:
            out.append(upper)
    if not out:
        raise ValueError("at least one client listener is needed")
    return tuple(out)
