"""The benchmarks' Java programs compile against the kafka-clients jar of the Kafka version
the harness serves by default (they use only the clients' public API)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aiokafka_lead.bench import java, share_java
from aiokafka_lead.testing.cluster import jars

JAVA_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "java"


@pytest.mark.parametrize(
    ("source", "build"),
    [("LeaderMoveLoad.java", java.build), ("ShareConsumerLoad.java", share_java.build)],
)
def test_java_program_compiles_against_the_default_kafka_clients(
    source: str, build: Callable[[Path, str], str]
) -> None:
    classpath = build(JAVA_DIR / source, jars.DEFAULT_KAFKA_VERSION)
    compiled = Path(classpath.split(":", 1)[0]) / f"{source.removesuffix('.java')}.class"
    assert compiled.is_file()
