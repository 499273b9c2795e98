"""What the Docker fixtures need to know about the engine and the broker image: the image
name (``$KAFKA_IMAGE``, default ``apache/kafka:<version>``), the tag of the project's own
build of it, and whether an engine answers."""

from __future__ import annotations

import shutil
import subprocess

from .cluster import jars

#: The image the fixtures and docker-compose.yml use unless ``KAFKA_IMAGE`` says otherwise.
DEFAULT_IMAGE = f"apache/kafka:{jars.DEFAULT_KAFKA_VERSION}"
IMAGE_ENV = "KAFKA_IMAGE"


def local_tag(version: str = jars.DEFAULT_KAFKA_VERSION) -> str:
    """The tag of the image ``python -m aiokafka_lead.testing.kafka_image build`` makes."""
    return f"aiokafka-lead/kafka:{version}"


def docker_problem(timeout: float = 20.0) -> str | None:
    """None when a Docker engine answers; otherwise why not (the CLI alone is not enough)."""
    if shutil.which("docker") is None:
        return "the docker command is not installed"
    try:
        proc = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return f"`docker info` did not answer within {timeout:.0f}s"
    if proc.returncode != 0 or not proc.stdout.strip():
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        return "no Docker engine answers `docker info`" + (f": {detail[-1]}" if detail else "")
    return None


__all__ = ["DEFAULT_IMAGE", "IMAGE_ENV", "docker_problem", "local_tag"]
