"""The Java share-group member (``benchmarks/java/ShareConsumerLoad.java``) used by the interop
test and the share-group benchmark: compiled once with ``javac`` against the kafka-clients jar
the cluster harness provisions, cached per user beside the jars."""

from __future__ import annotations

from pathlib import Path

from aiokafka_lead.bench.java import compile_class
from aiokafka_lead.testing.cluster import jars
from aiokafka_lead.testing.cluster.node import java_executable

MAIN_CLASS = "ShareConsumerLoad"
SOURCE = Path(__file__).resolve().parents[2] / "benchmarks" / "java" / f"{MAIN_CLASS}.java"


def build(source: Path = SOURCE, kafka_version: str = jars.DEFAULT_KAFKA_VERSION) -> str:
    """Compile ``source`` (once per content and Kafka version); return the classpath to run it."""
    what = "the Java share consumer"
    return compile_class(source, MAIN_CLASS, kafka_version, prefix="java-share", what=what)


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
