"""The Docker cluster's configuration: one set of broker settings (the jar harness's) for
the testcontainers nodes and docker-compose.yml, written the apache/kafka way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aiokafka_lead.testing import kafka_image
from aiokafka_lead.testing.containers import broker_settings, env_name

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


def kafka_docker_wrapper_name(variable: str) -> str:
    """The property apache/kafka's KafkaDockerWrapper derives from a variable name."""
    key = variable.removeprefix("KAFKA_").lower().replace("_", ".")
    return key.replace("...", "-").replace("..", "_")


@pytest.mark.parametrize(
    "prop",
    ["log.dirs", "replica.fetch.backoff.ms", "listener.name.sasl_ssl.plain.sasl.jaas.config", "a-b.c_d"],
)
def test_env_name_is_what_the_image_turns_back_into_the_property(prop: str) -> None:
    assert kafka_docker_wrapper_name(env_name(prop)) == prop


def _compose_environment() -> dict[str, str]:
    text = COMPOSE_FILE.read_text()
    common = text[text.index("x-kafka-common") : text.index("\nservices:")]
    return dict(re.findall(r'^\s+((?:KAFKA|CLUSTER)_[A-Z_]+):\s*"(.*)"\s*$', common, re.M))


def test_compose_file_uses_the_harness_broker_settings() -> None:
    env = _compose_environment()
    wanted = {env_name(k): v for k, v in broker_settings(3).items()}
    drift = {k: (v, env.get(k)) for k, v in wanted.items() if env.get(k) != v}
    assert not drift, (
        "docker-compose.yml's x-kafka-common environment differs from the harness's broker "
        f"settings (aiokafka_lead/testing/cluster/config.py); wanted vs found: {drift}"
    )


def test_compose_file_image_and_host_addresses() -> None:
    text = COMPOSE_FILE.read_text()
    assert f"image: ${{{kafka_image.IMAGE_ENV}:-{kafka_image.DEFAULT_IMAGE}}}" in text
    for node, port in ((1, 9092), (2, 9093), (3, 9094)):
        assert f'- "{port}:{port}"' in text
        assert f"EXTERNAL://localhost:{port}" in text
        assert f'KAFKA_NODE_ID: "{node}"' in text
