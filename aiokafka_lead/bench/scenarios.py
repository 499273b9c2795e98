"""The named conditions a leader-move comparison runs under: broker profile and network.

- ``kip-conditions``: KIP-951's own situation at this machine's scale. Brokers at Kafka's
  defaults; every client reaches every broker through a Toxiproxy link with 5 ms +- 1 ms
  latency each way and a bandwidth limit the load fills to 75% (``LINK_FILL``), so requests
  queue behind produce traffic as on a loaded real network.
- ``loopback-defaults``: Kafka's defaults, clients on loopback.
- ``loopback-fast-followers``: the ``fast-followers`` broker profile, clients on loopback.

Orthogonal to the scenario, the cluster's state: *bare* (only the measured topics) or with
``__consumer_offsets`` (``offsets_topic=True``: 50 idle partitions, as on any cluster a
consumer group has used). Idle partitions on the brokers make every leader move wait up to
``replica.fetch.wait.max.ms`` longer (a follower's fetch holding only idle partitions parks
that long before it can fetch the partitions it just started to follow; docs/kip-951.md).

``cluster_for`` starts the cluster (and the proxies) of a scenario and yields the
bootstrap string clients use; leader moves and topic set-up go around the emulated
network (the operator's side is not what is measured).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.netem import LinkConditions, Toxiproxy, proxy_cluster, toxiproxy_server

OFFSETS_TOPIC_PARTITIONS = 50  # Kafka's default offsets.topic.num.partitions
LINK_FILL = 0.75  # share of a link's bandwidth the benchmark load fills
LATENCY_MS = 5
JITTER_MS = 1
#: bytes on the wire per record beyond its value at linger 0 (batch and request framing, key)
WIRE_OVERHEAD_B = 120


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    profile: str
    emulated: bool  # clients reach the brokers through Toxiproxy links
    summary: str


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("kip-conditions", "kafka-defaults", True,
                 "KIP-951's conditions: a real network (latency, jitter, loaded links), broker defaults"),
        Scenario("loopback-defaults", "kafka-defaults", False, "loopback, broker defaults"),
        Scenario("loopback-fast-followers", "fast-followers", False, "loopback, fast followers"),
    )
}  # fmt: skip


def link_for(rate: float, record_size: int, brokers: int) -> LinkConditions:
    """Latency as above; bandwidth so that ``rate`` records/s spread over ``brokers`` fill
    ``LINK_FILL`` of each client-to-broker link."""
    per_link_kb_s = rate * (record_size + WIRE_OVERHEAD_B) / brokers / 1000
    return LinkConditions(LATENCY_MS, JITTER_MS, math.ceil(per_link_kb_s / LINK_FILL))


@dataclass(slots=True)
class Environment:
    """What a scenario's run measures against, and how to describe it."""

    scenario: Scenario
    bootstrap: str  # what the measured clients use
    control_bootstrap: str  # admin traffic (topics, moves): direct
    link: LinkConditions | None
    settings: dict[str, str]  # broker settings that differ from Kafka's defaults
    note: str = ""  # e.g. why the network emulation fell back to loopback
    offsets_topic: bool = False  # __consumer_offsets created before anything is measured

    def describe(self) -> list[str]:
        lines = [f"scenario: {self.scenario.name} ({self.scenario.summary})"]
        if self.note:
            lines.append(self.note)
        if self.link is not None:
            lines.append(f"network: Toxiproxy {self.link.describe()}")
        else:
            lines.append("network: loopback (no emulation)")
        lines.append(
            f"cluster state: __consumer_offsets present ({OFFSETS_TOPIC_PARTITIONS} idle partitions, "
            "as on any cluster a consumer group has used)"
            if self.offsets_topic
            else "cluster state: bare (the measured topics only, no __consumer_offsets; idle partitions "
            "would add up to replica.fetch.wait.max.ms to every move)"
        )
        changed = ", ".join(f"{k}={v}" for k, v in self.settings.items())
        lines.append(
            f"broker profile: {self.scenario.profile}"
            + (f"; differs from Kafka's defaults: {changed}" if changed else " (all Kafka's defaults)")
        )
        return lines


@contextlib.asynccontextmanager
async def cluster_for(
    scenario: Scenario,
    directory: Path,
    *,
    rate: float,
    record_size: int,
    brokers: int = 3,
    benchmark: bool = False,
    offsets_topic: bool = False,
    say: Callable[[str], None],
) -> AsyncIterator[Environment]:
    """Start a local cluster (and Toxiproxy) for ``scenario``; stop everything after. With
    ``offsets_topic`` a group coordinator lookup creates ``__consumer_offsets`` first."""
    binary, why = (None, "")
    if scenario.emulated:
        binary, why = await anyio.to_thread.run_sync(toxiproxy_server)
    note = "" if not scenario.emulated or binary else f"{why}: falling back to loopback"
    cluster = KafkaCluster(
        directory / "cluster", brokers, profile=scenario.profile, benchmark=benchmark,
        proxied=binary is not None,
    )  # fmt: skip
    say(f"starting a local {brokers}-node Apache Kafka KRaft cluster (broker profile {scenario.profile})...")
    await anyio.to_thread.run_sync(cluster.up)
    try:
        direct = cluster.bootstrap()
        if offsets_topic:
            say(f"creating __consumer_offsets ({OFFSETS_TOPIC_PARTITIONS} partitions)")
            async with AdminClient(bootstrap_servers=direct) as admin:
                await admin.find_coordinator("aiokafka-lead-benchmark")
        settings = cluster.non_default_settings()
        if binary is None:
            yield Environment(scenario, direct, direct, None, settings, note, offsets_topic=offsets_topic)
            return
        link = link_for(rate, record_size, brokers)
        toxiproxy = Toxiproxy(binary, directory / "toxiproxy.log")
        await anyio.to_thread.run_sync(toxiproxy.start)
        try:
            bootstrap = await anyio.to_thread.run_sync(proxy_cluster, toxiproxy, cluster, link)
            yield Environment(scenario, bootstrap, direct, link, settings, offsets_topic=offsets_topic)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(toxiproxy.stop)
    finally:
        say("stopping the cluster...")
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(cluster.down)
