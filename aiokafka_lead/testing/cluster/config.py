"""Per-node configuration: ports, ``node.properties``, logging config and JVM flags.

Everything here is pure (no processes, no network) so the layout of a node is easy to
read in one place. Settings favour fast, predictable tests over production realism.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .jars import uses_log4j2

#: Client-facing listener names; each is named after its security protocol.
CLIENT_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Inter-broker and controller traffic always stays on internal PLAINTEXT listeners.
INTERNAL_LISTENER = "INTERNAL"
CONTROLLER_LISTENER = "CONTROLLER"
#: A PLAINTEXT client listener advertised at a proxy's port (network emulation).
PROXIED_LISTENER = "PROXIED"
#: OAUTHBEARER here takes Kafka's unsecured validator (unsigned JWTs: ``alg`` "none"), unless a
#: cluster is given a JWKS URL to check signed tokens against
DEFAULT_SASL_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "OAUTHBEARER")


@dataclass
class NodePorts:
    """Ports of one node; ``client`` maps listener name to port and may change on restart."""

    controller: int
    internal: int
    client: dict[str, int] = field(default_factory=dict)
    #: listener -> the port advertised for it, where a proxy in front forwards to ``client``
    advertised: dict[str, int] = field(default_factory=dict)

    def all(self) -> list[int]:
        return [self.controller, self.internal, *self.client.values()]

    def advertised_port(self, listener: str) -> int:
        return self.advertised.get(listener, self.client[listener])


@dataclass(frozen=True)
class SecurityFiles:
    """PEM files and SASL users the broker config refers to (see ``security.py``)."""

    keystore: Path | None = None
    truststore: Path | None = None
    users: Mapping[str, str] = field(default_factory=dict)
    sasl_mechanisms: tuple[str, ...] = DEFAULT_SASL_MECHANISMS
    #: OAUTHBEARER: the JWKS URL signed tokens are checked against (Kafka's
    #: OAuthBearerValidatorCallbackHandler); None: Kafka's unsecured validator (unsigned JWTs)
    oauth_jwks_url: str | None = None
    #: OAUTHBEARER: the ``aud`` claim tokens must carry (with ``oauth_jwks_url``)
    oauth_audience: str | None = None
    #: OAUTHBEARER: the ``iss`` claim tokens must carry (Kafka 4.4 requires one)
    oauth_issuer: str | None = None
    #: GSSAPI: the broker's keytab and Kerberos principal (``kafka/host@REALM``)
    kerberos_keytab: Path | None = None
    kerberos_principal: str | None = None


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


#: Kafka 4.4's defaults (the same in 4.1) of every setting a profile changes (from its KafkaConfig), so a
#: run can print exactly what differs.
KAFKA_DEFAULTS: dict[str, str] = {
    "auto.leader.rebalance.enable": "true",
    "broker.session.timeout.ms": "9000",
    "broker.heartbeat.interval.ms": "2000",
    "group.initial.rebalance.delay.ms": "3000",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "default.replication.factor": "1",
    "offsets.topic.num.partitions": "50",
    "transaction.state.log.num.partitions": "50",
    "share.coordinator.state.topic.num.partitions": "50",
    "log.cleaner.dedupe.buffer.size": "134217728",
    "num.network.threads": "3",
    "num.io.threads": "8",
    "replica.fetch.backoff.ms": "1000",
    "replica.fetch.wait.max.ms": "500",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}

#: Followers that come back quickly after a leader move. With the defaults, a follower's
#: fetch parked on the new leader (up to replica.fetch.wait.max.ms, 500 ms) holds back the
#: partitions it just started to follow, and a follower refused for a stale epoch waits
#: replica.fetch.backoff.ms (1 s): acks=all produces wait for both (docs/kip-951.md).
FAST_FOLLOWERS = {"replica.fetch.backoff.ms": "100", "replica.fetch.wait.max.ms": "100"}

#: Named broker profiles: settings applied on top of Kafka's defaults.
PROFILES: dict[str, Callable[[int], dict[str, str]]] = {
    # Kafka's own defaults: what a new user's cluster runs.
    "kafka-defaults": lambda n: {},
    # The defaults plus fast followers.
    "fast-followers": lambda n: dict(FAST_FOLLOWERS),
    # The test suite's: leadership only moves when a test moves it (no automatic
    # rebalance), quick group and broker liveness, small internal topics and buffers,
    # topics replicated across the cluster by default, and fast followers.
    "testing": lambda n: {
        "auto.leader.rebalance.enable": "false",
        "broker.session.timeout.ms": "6000",
        "broker.heartbeat.interval.ms": "1000",
        "group.initial.rebalance.delay.ms": "0",
        # KIP-848 groups: a killed member expires in 10 s, not 45 (Kafka's minimum is lowered)
        "group.consumer.session.timeout.ms": "10000",
        "group.consumer.min.session.timeout.ms": "6000",
        "default.replication.factor": str(min(3, n)),
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.num.partitions": "5",
        "log.cleaner.dedupe.buffer.size": "2097152",
        "num.network.threads": "2",
        "num.io.threads": "4",
        **FAST_FOLLOWERS,
    },
}
DEFAULT_PROFILE = "kafka-defaults"


def profile_settings(profile: str, nodes: int) -> dict[str, str]:
    """The settings ``profile`` applies to a cluster of ``nodes`` nodes."""
    try:
        return PROFILES[profile](nodes)
    except KeyError:
        raise ValueError(f"unknown broker profile {profile!r}; choose from {sorted(PROFILES)}") from None


def non_default_settings(props: Mapping[str, str]) -> dict[str, str]:
    """The settings of ``props`` (a node's properties) that differ from Kafka's defaults,
    leaving out the structural ones (roles, listeners, quorum, directories)."""
    return {k: v for k, v in props.items() if k in KAFKA_DEFAULTS and KAFKA_DEFAULTS[k] != v}


def node_properties(
    node_id: int,
    ports: Mapping[int, NodePorts],
    *,
    host: str,
    data_dir: Path,
    security: SecurityFiles,
    profile: str = DEFAULT_PROFILE,
) -> dict[str, str]:
    """The full ``node.properties`` of one combined broker+controller node: the
    structural settings (roles, listeners, quorum, directories) plus ``profile``'s."""
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
        *(f"{name}://{host}:{own.advertised_port(name)}" for name in own.client),
    ]
    protocol_map = [f"{INTERNAL_LISTENER}:PLAINTEXT", f"{CONTROLLER_LISTENER}:PLAINTEXT"]
    protocol_map += [
        f"{name}:{'PLAINTEXT' if name == PROXIED_LISTENER else name}" for name in own.client
    ]
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
        # Internal topics cannot be replicated more widely than the cluster is.
        **({} if n >= 3 else {
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": min_isr,
        }),
        **profile_settings(profile, n),
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
                elif mech == "GSSAPI":
                    if security.kerberos_keytab is None or security.kerberos_principal is None:
                        raise ValueError("a GSSAPI listener needs kerberos_keytab and kerberos_principal")
                    module = (
                        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                        f'storeKey=true keyTab="{security.kerberos_keytab}" '
                        f'principal="{security.kerberos_principal}";'
                    )
                    service = security.kerberos_principal.split("/", 1)[0]
                    props[f"{prefix}.gssapi.sasl.kerberos.service.name"] = service
                    props["sasl.kerberos.service.name"] = service
                elif mech == "OAUTHBEARER":
                    module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
                    props.update(oauthbearer_settings(f"{prefix}.oauthbearer", security))
                else:
                    raise ValueError(f"unsupported SASL mechanism {mech!r}")
                props[f"{prefix}.{mech.lower()}.sasl.jaas.config"] = module
    return props


OAUTH_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
#: the JVM system property listing the URLs a broker may fetch for OAUTHBEARER (Kafka 3.9.1+)
OAUTH_ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"


def oauthbearer_settings(prefix: str, security: SecurityFiles) -> dict[str, str]:
    """A listener's OAUTHBEARER validation: signed JWTs against a JWKS endpoint, if given."""
    if security.oauth_jwks_url is None:
        return {}
    props = {
        f"{prefix}.sasl.server.callback.handler.class": OAUTH_VALIDATOR,
        "sasl.oauthbearer.jwks.endpoint.url": security.oauth_jwks_url,
    }
    if security.oauth_audience is not None:
        props["sasl.oauthbearer.expected.audience"] = security.oauth_audience
    if security.oauth_issuer is not None:
        props["sasl.oauthbearer.expected.issuer"] = security.oauth_issuer
    return props


def render_properties(props: Mapping[str, str]) -> str:
    """Java properties text; values here never contain backslashes or newlines."""
    lines = ["# written by aiokafka_lead.testing.cluster; rewritten on every start"]
    for key, value in props.items():
        if "\\" in value or "\n" in value:
            raise ValueError(f"cannot write {key}={value!r} as a property")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def logging_config(
    version: str, log_file: Path, *, request_log: bool = False
) -> tuple[str, str, str]:
    """(file name, contents, JVM flag) of a logging config writing to ``log_file``; with
    ``request_log`` (Kafka 4.x) every completed request, with its queue, local, remote
    (purgatory) and send times, goes to ``requests.log`` beside it.

    Kafka 4.x logs through log4j2; 3.x through reload4j (log4j 1 syntax).
    """
    pattern = "[%d] %p %m (%c)%n"
    if uses_log4j2(version):
        requests = [
            "appender.req.type = File",
            "appender.req.name = REQUESTS",
            f"appender.req.fileName = {log_file.with_name('requests.log')}",
            "appender.req.layout.type = PatternLayout",
            f"appender.req.layout.pattern = {pattern}",
            "logger.request.name = kafka.request.logger",
            "logger.request.level = DEBUG",
            "logger.request.additivity = false",
            "logger.request.appenderRef.req.ref = REQUESTS",
        ] if request_log else []  # fmt: skip
        text = "\n".join(
            [
                *requests,
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
