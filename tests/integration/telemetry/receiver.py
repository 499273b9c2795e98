"""A real broker with a client telemetry receiver (KIP-714): ``TelemetryFileReceiver.java``,
compiled at test time against the cluster's jars with the JDK that runs the brokers, writes
every push it receives to a file; :func:`pushes` reads it back."""

from __future__ import annotations

import base64
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from aiokafka_lead.testing.cluster import KafkaCluster, jars
from aiokafka_lead.testing.cluster.node import java_executable

SOURCE = Path(__file__).with_name("TelemetryFileReceiver.java")
CLASS = "TelemetryFileReceiver"
#: the largest push the broker accepts, compressed (else TELEMETRY_TOO_LARGE) and decompressed
#: (else INVALID_RECORD): a narrow subscription fits, every metric of a producer does not
MAX_BYTES = 4096


@dataclass(frozen=True)
class Received:
    at_ms: int
    client_instance_id: uuid.UUID
    terminating: bool
    client_id: str
    content_type: str
    metrics: bytes


def compile_receiver(into: Path, kafka_version: str = jars.DEFAULT_KAFKA_VERSION) -> Path:
    libs = jars.provision(kafka_version, quiet=True)
    javac = Path(java_executable()).resolve().with_name("javac")
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(javac), "-nowarn", "-cp", f"{libs}/*", "-d", str(into), str(SOURCE)],
        check=True,
        capture_output=True,
        text=True,
    )
    return into


def receiver_cluster(directory: Path) -> tuple[KafkaCluster, Path]:
    """A one-node cluster whose broker runs the receiver; the file it writes."""
    classes = compile_receiver(directory / "classes")
    received = directory / "pushes.tsv"
    received.touch()
    cluster = KafkaCluster(
        directory / "cluster",
        1,
        listeners=("PLAINTEXT",),
        extra_properties={"metric.reporters": CLASS, "telemetry.max.bytes": str(MAX_BYTES)},
        jvm_properties={"aiokafka.telemetry.file": str(received)},
        classpath=[classes],
    )
    return cluster, received


def pushes(received: Path, client_instance_id: uuid.UUID | None = None) -> list[Received]:
    out = []
    for line in received.read_text().splitlines():
        at, instance, terminating, client_id, content_type, data = line.split("\t")
        metrics = base64.b64decode(data)
        instance_id = uuid.UUID(bytes=base64.urlsafe_b64decode(instance + "=="))  # Kafka's Uuid.toString()
        push = Received(int(at), instance_id, terminating == "true", client_id, content_type, metrics)
        if client_instance_id is None or push.client_instance_id == client_instance_id:
            out.append(push)
    return out
