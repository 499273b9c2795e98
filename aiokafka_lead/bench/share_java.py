"""The Java share-group member (``benchmarks/java/ShareConsumerLoad.java``) used by the interop
test and the share-group benchmark: compiled once with ``javac`` against the kafka-clients jar
the cluster harness provisions, cached per user beside the jars."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from aiokafka_lead.testing.cluster import jars
from aiokafka_lead.testing.cluster.node import ClusterError, java_executable

MAIN_CLASS = "ShareConsumerLoad"
SOURCE = Path(__file__).resolve().parents[2] / "benchmarks" / "java" / f"{MAIN_CLASS}.java"


def build(source: Path = SOURCE, kafka_version: str = jars.DEFAULT_KAFKA_VERSION) -> str:
    """Compile ``source`` (once per content and Kafka version); return the classpath to run it."""
    libs = jars.provision(kafka_version, quiet=True)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    out = jars.cache_root() / f"java-share-{kafka_version}-{digest}"
    classpath = f"{out}:{libs}/*"
    if (out / f"{MAIN_CLASS}.class").exists():
        return classpath
    javac = shutil.which("javac")
    if javac is None:
        raise ClusterError("javac is not on PATH (a JDK 17+ is needed for the Java share consumer)")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    subprocess.run(
        [javac, "-nowarn", "-cp", f"{libs}/*", "-d", str(tmp), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return classpath


def command(
    classpath: str,
    bootstrap: str,
    topic: str,
    group: str,
    *,
    explicit: bool,
    idle_ms: int,
    max_ms: int,
    barrier: bool = False,
) -> list[str]:
    """The command line of one Java member (see the source's header for its output); with
    ``barrier`` it prints READY and waits for a line on stdin before it polls."""
    mode = "explicit" if explicit else "implicit"
    return [
        java_executable(), "-Xmx256m", "-cp", classpath, MAIN_CLASS,
        bootstrap, topic, group, mode, str(idle_ms), str(max_ms), *(["barrier"] if barrier else []),
    ]  # fmt: skip


__all__ = ["MAIN_CLASS", "SOURCE", "build", "command"]
