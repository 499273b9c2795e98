"""The leader-move measurement: latency from the scheduled time, blocked sends charged;
broker profiles and what is reported as differing from Kafka's defaults; link sizing."""

from __future__ import annotations

import math
from pathlib import Path

import anyio
import pytest

from aiokafka_lead.bench.load import Pacer, paced_async
from aiokafka_lead.bench.scenarios import LINK_FILL, SCENARIOS, WIRE_OVERHEAD_B, Environment, link_for
from aiokafka_lead.bench.stats import Samples, summarize
from aiokafka_lead.testing.cluster import config
from aiokafka_lead.testing.cluster.config import NodePorts, SecurityFiles

RATE = 200.0
BLOCK_S = 0.3


async def test_a_blocked_send_is_charged_to_every_record_scheduled_behind_it() -> None:
    samples = Samples("c")
    pacer = Pacer(samples, rate=RATE, duration_s=0.25)

    async def send(index: int) -> None:
        if index == 5:
            await anyio.sleep(BLOCK_S)  # e.g. waiting for metadata or buffer space
        pacer.acked(index, ok=True)

    with anyio.fail_after(10):
        await paced_async(pacer, send)
    assert len(samples.latency_ms) == 50
    assert samples.blocked_ms[5] >= BLOCK_S * 1000 * 0.9
    # record i (> 5) was due at start + i / rate but could only be handed over after the
    # block: its latency counts from when it was due, not from when send() was called
    for i in range(6, 50):
        due_after_block_ms = (5 / RATE + BLOCK_S - i / RATE) * 1000
        if due_after_block_ms > 20:
            assert samples.latency_ms[i] is not None and samples.latency_ms[i] >= due_after_block_ms * 0.9
    first = samples.scheduled_at[0]
    assert samples.scheduled_at[10] == pytest.approx(first + 10 / RATE)
    summary = summarize(samples)
    assert summary.blocked_max_ms == samples.blocked_ms[5]
    assert summary.max_ms >= BLOCK_S * 1000 * 0.9


def test_undelivered_records_count_as_failed_and_stalls_are_per_move() -> None:
    s = Samples("c", scheduled_at=[0.0, 1.0, 2.0, 10.0], latency_ms=[5.0, 900.0, None, 7.0],
                blocked_ms=[0.0, 1.0, 0.0, 0.0], moves=[(0.5, 0.8), (9.0, 9.5)])  # fmt: skip
    summary = summarize(s)
    assert summary.failed == 1 and summary.records == 4
    assert summary.stall_ms == [900.0, 7.0]
    assert summary.blocked_total_ms == 1.0
    assert Samples.from_json(s.to_json()) == s


def props(profile: str, nodes: int = 3) -> dict[str, str]:
    ports = {n: NodePorts(1000 + n, 2000 + n, {"PLAINTEXT": 3000 + n}) for n in range(1, nodes + 1)}
    return config.node_properties(1, ports, host="127.0.0.1", data_dir=Path("/d"),
                                  security=SecurityFiles(), profile=profile)  # fmt: skip


def test_kafka_defaults_profile_changes_no_setting() -> None:
    assert config.non_default_settings(props("kafka-defaults")) == {}
    # a 1-node cluster must shrink the internal topics: that is reported too
    assert config.non_default_settings(props("kafka-defaults", 1))["offsets.topic.replication.factor"] == "1"


def test_fast_followers_and_testing_profiles_are_reported_exactly() -> None:
    assert config.non_default_settings(props("fast-followers")) == {
        "replica.fetch.backoff.ms": "100",
        "replica.fetch.wait.max.ms": "100",
    }
    testing = config.non_default_settings(props("testing"))
    assert testing["auto.leader.rebalance.enable"] == "false"
    assert testing["replica.fetch.wait.max.ms"] == "100"
    assert set(testing) == set(config.profile_settings("testing", 3)) - {
        k for k, v in config.profile_settings("testing", 3).items() if config.KAFKA_DEFAULTS.get(k) == v
    }
    with pytest.raises(ValueError, match="unknown broker profile"):
        config.profile_settings("fastest", 3)


def test_proxied_listener_is_advertised_at_the_proxy_port() -> None:
    ports = {1: NodePorts(1001, 2001, {"PLAINTEXT": 3001, "PROXIED": 4001}, {"PROXIED": 5001})}
    p = config.node_properties(1, ports, host="127.0.0.1", data_dir=Path("/d"), security=SecurityFiles())
    assert "PROXIED://127.0.0.1:4001" in p["listeners"]
    assert "PROXIED://127.0.0.1:5001" in p["advertised.listeners"]
    assert "PROXIED:PLAINTEXT" in p["listener.security.protocol.map"]


def test_links_are_sized_so_the_load_fills_three_quarters() -> None:
    link = link_for(2000, 1024, 3)
    load_kb_s = 2000 * (1024 + WIRE_OVERHEAD_B) / 3 / 1000
    assert link.bandwidth_kb_s == math.ceil(load_kb_s / LINK_FILL)
    assert 0.74 <= load_kb_s / link.bandwidth_kb_s <= 0.76
    assert (link.latency_ms, link.jitter_ms) == (5, 1)


def test_the_cluster_state_is_printed_with_the_conditions() -> None:
    scenario = SCENARIOS["loopback-defaults"]
    bare = Environment(scenario, "b:1", "b:1", None, {})
    used = Environment(scenario, "b:1", "b:1", None, {}, offsets_topic=True)
    bare_text, used_text = "\n".join(bare.describe()), "\n".join(used.describe())
    assert "cluster state: bare (the measured topics only, no __consumer_offsets" in bare_text
    assert "cluster state: __consumer_offsets present (50 idle partitions" in used_text
    assert bare.describe()[1] == "network: loopback (no emulation)"
