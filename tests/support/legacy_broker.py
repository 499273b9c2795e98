"""A Kafka 2.0 broker (older than the client supports) on ZooKeeper, for the test that the
client refuses it clearly.

No Kafka before 2.8 runs without ZooKeeper, so the KRaft harness cannot start one. This
starts ZooKeeper and Kafka 2.0.1 (Scala 2.12) from Maven Central jars, cached next to the
harness's; ZooKeeper 3.5 replaces the 3.4 that Kafka 2.0 ships with, whose client does not
run on Java 14+. Processes are started and stopped with the harness's marker-checked
process control.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from aiokafka_lead.testing.cluster import jars, node
from aiokafka_lead.testing.cluster.config import free_ports
from aiokafka_lead.testing.cluster.node import ClusterError

LEGACY_VERSION = "2.0.1"
ZOOKEEPER_VERSION = "3.5.9"

_POM = f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>aiokafka-lead.testing</groupId>
  <artifactId>legacy-kafka</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka_2.12</artifactId><version>{LEGACY_VERSION}</version>
      <exclusions>
        <exclusion><groupId>org.apache.zookeeper</groupId><artifactId>zookeeper</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <groupId>org.apache.zookeeper</groupId><artifactId>zookeeper</artifactId><version>{ZOOKEEPER_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId><version>1.7.25</version>
    </dependency>
  </dependencies>
</project>
"""


def provision() -> Path:
    """The jars' directory, downloaded with mvn on first use (renamed into place whole)."""
    target = jars.cache_root() / f"kafka-{LEGACY_VERSION}-zk{ZOOKEEPER_VERSION}" / "libs"
    if target.is_dir() and any(target.glob(f"kafka_2.12-{LEGACY_VERSION}.jar")):
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterError("mvn is not on PATH: it is needed to fetch the Kafka 2.0 jars")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".provision-", dir=target.parent) as tmp:
        work = Path(tmp)
        (work / "pom.xml").write_text(_POM)
        staged = work / "libs"
        proc = subprocess.run(
            [
                mvn,
                "-q",
                "-B",
                "-f",
                str(work / "pom.xml"),
                f"org.apache.maven.plugins:maven-dependency-plugin:{jars.DEPENDENCY_PLUGIN_VERSION}"
                ":copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staged}",
            ],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if proc.returncode != 0:
            raise ClusterError(f"mvn failed fetching Kafka {LEGACY_VERSION}:\n{proc.stdout[-3000:]}")
        try:
            staged.rename(target)
        except OSError:
            if not target.is_dir():
                raise
    return target


def _wait_for(
    what: str, ready: Callable[[], bool], timeout: float, pids: list[tuple[int, str]], log: Path
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if not all(node.is_ours(pid, marker) for pid, marker in pids):
            raise ClusterError(f"{what}: a process exited\n{node.tail(log)}")
        time.sleep(0.2)
    raise ClusterError(f"{what} within {timeout:.0f}s\n{node.tail(log)}")


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def legacy_broker(directory: Path, timeout: float = 90.0) -> Iterator[str]:
    """A single Kafka 2.0.1 broker with its ZooKeeper; yields its bootstrap address."""
    libs = provision()
    zk_port, kafka_port = free_ports(2)
    for sub in ("zk", "data", "logs"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    log = directory / "logs" / "server.log"
    (directory / "log4j.properties").write_text(
        "log4j.rootLogger=INFO, file\n"
        "log4j.appender.file=org.apache.log4j.FileAppender\n"
        f"log4j.appender.file.File={log}\n"
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
    )
    (directory / "zk.properties").write_text(
        f"dataDir={directory / 'zk'}\nclientPort={zk_port}\nclientPortAddress=127.0.0.1\n"
        "maxClientCnxns=0\nadmin.enableServer=false\n"
    )
    (directory / "server.properties").write_text(
        f"broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:{kafka_port}\nlog.dirs={directory / 'data'}\n"
        f"zookeeper.connect=127.0.0.1:{zk_port}\noffsets.topic.replication.factor=1\n"
    )
    java = [
        node.java_executable(),
        "-Xmx256m",
        "-XX:+UseSerialGC",
        f"-Dlog4j.configuration=file:{directory / 'log4j.properties'}",
    ]
    started: list[tuple[int, str]] = []
    try:
        for main_class, config, port in (
            ("org.apache.zookeeper.server.quorum.QuorumPeerMain", "zk.properties", zk_port),
            ("kafka.Kafka", "server.properties", kafka_port),
        ):
            marker = node.new_marker(directory, len(started))
            classpath = ["-cp", node.classpath(libs)]
            cmd = [*java, node.marker_flag(marker), *classpath, main_class, str(directory / config)]
            pid = node.spawn(cmd, cwd=directory, output=directory / "logs" / f"{main_class}.out")
            started.append((pid, marker))
            listening = f"{main_class} listening on {port}"
            _wait_for(listening, lambda p=port: _port_open(p), timeout, started, log)
        _wait_for(
            f"Kafka {LEGACY_VERSION} started",
            lambda: "started (kafka.server.KafkaServer)" in log.read_text(errors="replace"),
            timeout,
            started,
            log,
        )
        yield f"127.0.0.1:{kafka_port}"
    finally:
        for pid, marker in reversed(started):  # the data is throwaway: no graceful shutdown
            node.send_signal(pid, marker, signal.SIGKILL)
            node.wait_exit(pid, marker, 30.0)
