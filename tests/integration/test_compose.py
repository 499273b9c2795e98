"""docker-compose.yml: the 3-node cluster starts with `docker compose` (v2) or
`docker-compose` (v1), serves the host at the README's addresses, survives a leader move,
and comes down leaving nothing behind.

Skipped, with one reason, where no Docker engine answers; needs host ports 9092-9094.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.testing import kafka_image
from aiokafka_lead.testing.cluster import config, probe
from aiokafka_lead.testing.cluster.waiting import wait_until
from aiokafka_lead.testing.containers import default_image
from aiokafka_lead.testing.leaders import current_leaders, rotate_leadership
from aiokafka_lead.testing.pytest_plugin import require_docker
from tests.support.roundtrip import expected, produce_and_read
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "docker-compose.yml"
README_BOOTSTRAP = "localhost:9092,localhost:9093,localhost:9094"
PROJECT = "aiokafka-lead-compose-test"


def compose_command() -> list[str] | None:
    """``docker compose`` (the v2 plugin) if it works, else ``docker-compose`` (v1)."""
    for cmd in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(cmd[0]) is None:
            continue
        if subprocess.run([*cmd, "version"], capture_output=True, check=False).returncode == 0:
            return cmd
    return None


def run(cmd: list[str], *args: str, timeout: float = 300) -> str:
    proc = subprocess.run(
        [*cmd, "-f", str(COMPOSE_FILE), "-p", PROJECT, *args],
        env={**os.environ, kafka_image.IMAGE_ENV: default_image()},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def all_three_ready() -> bool:
    for port in (9092, 9093, 9094):
        md = probe.try_metadata("localhost", port, timeout=3.0)
        if md is None or sorted(f"{b.host}:{b.port}" for b in md.brokers) != README_BOOTSTRAP.split(","):
            return False
    return True


async def through_all_three_brokers_and_a_leader_move() -> None:
    topic = f"compose-{uuid.uuid4().hex[:8]}"
    async with AdminClient(bootstrap_servers=README_BOOTSTRAP) as admin:
        # One partition led by each broker: records go through all three.
        await admin.create_topics(
            [NewTopic(topic, replica_assignments={0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})]
        )

        async def each_broker_leads_one() -> bool:
            leaders = await current_leaders(admin, [topic])
            return {leader for leader, _ in leaders.values()} == {1, 2, 3}

        with anyio.fail_after(60):
            await eventually(each_broker_leads_one, interval=0.2)
        assert await produce_and_read(README_BOOTSTRAP, topic, 3, 30, "a") == expected(3, 30, "a")

        before = await current_leaders(admin, [topic])
        with anyio.fail_after(90):
            moved = await rotate_leadership(admin, [topic])
        after = await current_leaders(admin, [topic])
        for tp, (leader, epoch) in before.items():
            assert moved[tp] != leader and after[tp][0] == moved[tp]
            assert after[tp][1] > epoch  # a new leader epoch
    # Exactly the records written, through the new leaders, from a fresh client.
    assert await produce_and_read(README_BOOTSTRAP, topic, 3, 30, "b") == expected(3, 30, "b")


def test_compose_cluster_up_produce_consume_move_leader_down() -> None:
    require_docker()
    cmd = compose_command()
    assert cmd is not None, "neither `docker compose` nor `docker-compose` works here"
    busy = [p for p in (9092, 9093, 9094) if not config.port_is_free(p, "0.0.0.0")]
    assert not busy, f"host ports {busy} are taken: docker-compose.yml publishes 9092-9094"
    image = default_image()  # passed to compose as KAFKA_IMAGE
    run(cmd, "up", "-d")
    try:
        try:
            wait_until(all_three_ready, 180, "3 compose brokers on 9092-9094", max_interval=1.0)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{run(cmd, 'logs', '--tail', '40')}") from None
        assert len(run(cmd, "ps", "-q").split()) == 3
        images = subprocess.run(
            ["docker", "inspect", "--format", "{{.Config.Image}}", *run(cmd, "ps", "-q").split()],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        assert images == [image] * 3
        anyio.run(through_all_three_brokers_and_a_leader_move)
    finally:
        run(cmd, "down", "-v", "--timeout", "5")
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={PROJECT}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert left == [], "containers left behind"
