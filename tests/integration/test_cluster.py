"""The test cluster itself: start, disturb and recover real Kafka KRaft nodes.

These tests only use Kafka's own tools and the hand-rolled Metadata probe, so they
check the harness independently of the client being built on top of it.
"""

from __future__ import annotations

import os
import re
import socket
import ssl
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiokafka_lead.testing.cluster import ClusterError, KafkaCluster, fetch_metadata, tools, wait_until
from aiokafka_lead.testing.cluster.external import ExternalCluster

pytestmark = pytest.mark.integration

TOPICS = tools.TOPIC_COMMAND
QUORUM = tools.METADATA_QUORUM_COMMAND
ELECTION = tools.LEADER_ELECTION_COMMAND
_PARTITION = re.compile(r"Partition:\s*(\d+)\s+Leader:\s*(\S+)")


def _new_topic() -> str:
    return f"harness-{uuid.uuid4().hex[:10]}"


def topic_leaders(cluster: KafkaCluster | ExternalCluster, topic: str) -> dict[int, int | None]:
    """partition -> leader id (None when leaderless), from TopicCommand --describe."""
    out = run_topics(cluster, "--describe", "--topic", topic)
    leaders: dict[int, int | None] = {}
    for partition, leader in _PARTITION.findall(out):
        leaders[int(partition)] = None if leader in ("none", "-1") else int(leader)
    return leaders


def run_topics(cluster: KafkaCluster | ExternalCluster, *args: str) -> str:
    return cluster.run_tool(TOPICS, "--bootstrap-server", cluster.bootstrap(), *args)


def create_topic(cluster: KafkaCluster | ExternalCluster, topic: str, *args: str) -> None:
    run_topics(cluster, "--create", "--topic", topic, *args)
    wait_until(lambda: topic_leaders(cluster, topic), 60, f"topic {topic} to be described")


@pytest.fixture
def node_control(kafka_node_control: KafkaCluster) -> Iterator[KafkaCluster]:
    """The shared 3-node cluster, brought back to all-nodes-running after the test so
    the next test starts from a healthy cluster."""
    yield kafka_node_control
    for nid in kafka_node_control.node_ids:
        if not kafka_node_control.is_running(nid):
            kafka_node_control.start_node(nid)


def test_single_node_cluster_starts(kafka_cluster_1: KafkaCluster | ExternalCluster) -> None:
    host, port = kafka_cluster_1.bootstrap().split(",")[0].split(":")
    md = fetch_metadata(host, int(port))
    if isinstance(kafka_cluster_1, ExternalCluster):
        assert md.brokers  # the external cluster stands in for both fixtures
    else:
        assert [b.node_id for b in md.brokers] == [1]
    out = kafka_cluster_1.run_tool(
        QUORUM, "--bootstrap-server", kafka_cluster_1.bootstrap(), "describe", "--status"
    )
    assert "LeaderId:" in out


def test_three_node_cluster_starts(kafka_cluster: KafkaCluster | ExternalCluster) -> None:
    addresses = kafka_cluster.bootstrap().split(",")
    assert len(addresses) == 3
    for address in addresses:
        host, port = address.rsplit(":", 1)
        md = fetch_metadata(host, int(port))
        assert sorted(md.ports()) == [1, 2, 3]
        assert sorted(f"{b.host}:{b.port}" for b in md.brokers) == sorted(addresses)


def test_topic_created_and_described(kafka_cluster: KafkaCluster | ExternalCluster) -> None:
    topic = _new_topic()
    create_topic(kafka_cluster, topic, "--partitions", "3", "--replication-factor", "3")
    leaders = topic_leaders(kafka_cluster, topic)
    assert sorted(leaders) == [0, 1, 2]
    assert all(leader in (1, 2, 3) for leader in leaders.values())
    assert topic in run_topics(kafka_cluster, "--list")


def test_killed_node_restarts_and_cluster_recovers(node_control: KafkaCluster) -> None:
    cluster = node_control
    topic = _new_topic()
    # A single replica pinned to node 3: its partition is leaderless exactly while 3 is down.
    create_topic(cluster, topic, "--replica-assignment", "3,3")
    assert topic_leaders(cluster, topic) == {0: 3, 1: 3}

    cluster.kill_node(3)
    assert not cluster.is_running(3)
    wait_until(
        lambda: set(topic_leaders(cluster, topic).values()) == {None},
        60,
        "node 3's partitions to lose their leader after SIGKILL",
    )

    cluster.start_node(3)
    wait_until(
        lambda: topic_leaders(cluster, topic) == {0: 3, 1: 3},
        90,
        "node 3 to lead its partitions again",
    )
    status = cluster.run_tool(QUORUM, "--bootstrap-server", cluster.bootstrap(), "describe", "--status")
    assert re.search(r"LeaderId:\s+[123]\b", status), status


def test_graceful_stop_moves_leadership(node_control: KafkaCluster) -> None:
    cluster = node_control
    topic = _new_topic()
    create_topic(cluster, topic, "--replica-assignment", "2:1:3,2:3:1")
    wait_until(lambda: topic_leaders(cluster, topic) == {0: 2, 1: 2}, 60, "node 2 to lead both")

    cluster.stop_node(2)  # returns once the JVM exited after its controlled shutdown

    def all_led() -> dict[int, int | None] | None:
        got = topic_leaders(cluster, topic)
        return got if got and None not in got.values() else None

    leaders = wait_until(all_led, 30, "every partition to have a leader again")
    assert 2 not in leaders.values(), leaders

    cluster.start_node(2)
    # Automatic rebalancing is off, so leadership only returns when asked to.
    cluster.run_tool(
        ELECTION,
        "--bootstrap-server",
        cluster.bootstrap(),
        "--election-type",
        "PREFERRED",
        "--topic",
        topic,
        "--partition",
        "0",
    )
    wait_until(lambda: topic_leaders(cluster, topic)[0] == 2, 60, "preferred leader 2 back")


def test_restart_on_new_port_advertises_it(node_control: KafkaCluster) -> None:
    cluster = node_control
    before = cluster.ports(1)
    old_port, controller_port = before.client["PLAINTEXT"], before.controller

    cluster.restart_node(1, new_port=True)

    after = cluster.ports(1)
    assert after.client["PLAINTEXT"] != old_port
    assert after.controller == controller_port
    assert f"127.0.0.1:{after.client['PLAINTEXT']}" in cluster.bootstrap()
    for nid in cluster.node_ids:  # every node, not just the restarted one, knows the port
        md = fetch_metadata("127.0.0.1", cluster.ports(nid).client["PLAINTEXT"])
        assert md.ports()[1] == after.client["PLAINTEXT"]


@pytest.mark.security_listeners
@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
@pytest.mark.parametrize("server_name", ["127.0.0.1", "localhost"])
def test_tls_listener_handshake(kafka_cluster: KafkaCluster, listener: str, server_name: str) -> None:
    if kafka_cluster.ca_file is None:
        pytest.skip("no CA file for this cluster")
    context = ssl.create_default_context(cafile=str(kafka_cluster.ca_file))
    for address in kafka_cluster.bootstrap(listener).split(","):
        host, port = address.rsplit(":", 1)
        with (
            socket.create_connection((host, int(port)), timeout=15) as raw,
            context.wrap_socket(raw, server_hostname=server_name) as tls,
        ):
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
            assert tls.getpeercert() is not None


@pytest.mark.security_listeners
def test_sasl_users_exposed(kafka_cluster: KafkaCluster) -> None:
    if isinstance(kafka_cluster, ExternalCluster):
        pytest.skip("users of an external cluster are unknown")
    assert kafka_cluster.users
    assert kafka_cluster.bootstrap("SASL_PLAINTEXT") != kafka_cluster.bootstrap("SASL_SSL")


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aiokafka_lead.testing.cluster", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=check,
    )


def _our_java_pids(directory: Path) -> list[int]:
    """JVMs whose command line mentions ``directory`` (only ours do)."""
    pids = []
    needle = str(directory.resolve()).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and b"java" in cmdline:
            pids.append(int(entry.name))
    return pids


def test_cli_contract(tmp_path: Path) -> None:
    directory = tmp_path / "cli-cluster"
    up = _cli("up", "--brokers", "1", "--dir", str(directory))
    try:
        last = up.stdout.strip().splitlines()[-1]
        assert re.fullmatch(r"bootstrap=127\.0\.0\.1:\d+", last), up.stdout
        assert (directory / "cluster.json").exists()

        status = _cli("status", "--dir", str(directory))
        assert status.stdout.strip().splitlines()[-1] == last

        refused = _cli("up", "--brokers", "1", "--dir", str(directory), check=False)
        assert refused.returncode != 0 and "already running" in refused.stderr

        _cli("kill", "--dir", str(directory), "--node", "1")
        assert _cli("status", "--dir", str(directory), check=False).returncode != 0

        port = int(last.rsplit(":", 1)[1])
        with socket.socket() as squatter:  # someone else took the node's port meanwhile
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            busy = _cli("start", "--dir", str(directory), "--node", "1", check=False)
        assert busy.returncode != 0 and "in use" in busy.stderr, busy.stderr
        started = _cli("start", "--dir", str(directory), "--node", "1")
        assert started.stdout.strip().splitlines()[-1] == last
        assert _cli("status", "--dir", str(directory)).returncode == 0

        restarted = _cli("restart", "--dir", str(directory), "--node", "1", "--new-port")
        new_last = restarted.stdout.strip().splitlines()[-1]
        assert new_last.startswith("bootstrap=") and new_last != last
    finally:
        down = _cli("down", "--dir", str(directory), check=False)
    assert down.returncode == 0, down.stderr
    assert _our_java_pids(directory) == []
    assert _cli("status", "--dir", str(directory), check=False).returncode != 0


def test_plugin_import_has_no_side_effects() -> None:
    code = (
        "import sys, aiokafka_lead.testing.pytest_plugin as p;"
        "heavy = [m for m in ('cryptography',) if m in sys.modules];"
        "print(heavy)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert "cryptography" not in out.stdout


@pytest.mark.security_listeners
@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [
        ("SSL", ""),
        ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
        ("SASL_SSL", "SCRAM-SHA-512"),
        ("SASL_SSL", "PLAIN"),
    ],
)
def test_security_listener_serves_kafkas_own_client(
    kafka_cluster: KafkaCluster, listener: str, mechanism: str
) -> None:
    """Kafka's Java admin client authenticates with the exposed users and CA, so the
    broker side of every security listener is configured right before our client exists."""
    if isinstance(kafka_cluster, ExternalCluster):
        pytest.skip("needs the cluster's users and CA")
    cfg = kafka_cluster.client_config_file(listener, mechanism=mechanism or "none")
    topic = _new_topic()
    bootstrap = kafka_cluster.bootstrap(listener)
    secured = ("--bootstrap-server", bootstrap, "--command-config", str(cfg))
    kafka_cluster.run_tool(TOPICS, *secured, "--create", "--topic", topic, "--partitions", "1")
    assert topic in kafka_cluster.run_tool(TOPICS, *secured, "--list").split()


@pytest.mark.security_listeners
def test_wrong_sasl_password_is_rejected(kafka_cluster: KafkaCluster) -> None:
    if isinstance(kafka_cluster, ExternalCluster):
        pytest.skip("needs the cluster's users")
    cfg = kafka_cluster.client_config_file("SASL_PLAINTEXT", user="alice", password="wrong")
    proc = tools.run_java_main(
        kafka_cluster.kafka_version,
        QUORUM,
        ["--bootstrap-server", kafka_cluster.bootstrap("SASL_PLAINTEXT"),
         "--command-config", str(cfg), "describe", "--status"],
        timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "SaslAuthenticationException" in proc.stderr, proc.stderr[-2000:]


def test_startup_fails_fast_with_the_node_log(tmp_path: Path) -> None:
    """A node that dies during startup is reported at once, with its log, not after the
    readiness deadline."""
    cluster = KafkaCluster(
        tmp_path / "broken", 1, extra_properties={"authorizer.class.name": "no.such.Authorizer"}
    )
    with pytest.raises(ClusterError, match="exited during startup") as info:
        cluster.up(timeout=300)
    assert "no.such.Authorizer" in str(info.value)
    assert _our_java_pids(tmp_path / "broken") == []
