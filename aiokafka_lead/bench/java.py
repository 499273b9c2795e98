"""The benchmarks' Java load client: compiled once with ``javac`` against the kafka-clients
jar the cluster harness provisions, cached per user beside the jars."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from aiokafka_lead.testing.cluster import jars
from aiokafka_lead.testing.cluster.node import ClusterError, java_executable

MAIN_CLASS = "LeaderMoveLoad"


def build(source: Path, kafka_version: str = jars.DEFAULT_KAFKA_VERSION) -> str:
    """Compile ``source`` (once per content and Kafka version); return the classpath to run it."""
    what = "the Java benchmark client"
    return compile_class(source, MAIN_CLASS, kafka_version, prefix="java-bench", what=what)


def compile_class(source: Path, main_class: str, kafka_version: str, *, prefix: str, what: str) -> str:
    """Compile ``source`` against the kafka-clients jar of ``kafka_version`` into the user's
    cache (``prefix``-version-digest, once per content); return the classpath to run it."""
    libs = jars.provision(kafka_version, quiet=True)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    out = jars.cache_root() / f"{prefix}-{kafka_version}-{digest}"
    classpath = f"{out}:{libs}/*"
    if (out / f"{main_class}.class").exists():
        return classpath
    javac = shutil.which("javac")
    if javac is None:
        raise ClusterError(f"javac is not on PATH (a JDK 17+ is needed for {what})")
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


def command(classpath: str, *args: str, main_class: str = MAIN_CLASS) -> list[str]:
    """The command line running ``main_class`` (the load client by default) with ``args``."""
    return [java_executable(), "-Xmx512m", "-cp", classpath, main_class, *args]
