"""The named conditions a leader-move comparison runs under: broker profile and network.

- ``kip-conditions``: KIP-951's own situation at this machine's scale. Brokers at Kafka's
  defaults; every client reaches every broker through a Toxiproxy link with 5 ms +- 1 ms
  latency each way and a bandwidth limit the load fills to 75% (``LINK_FILL``), so requests
  queue behind produce traffic as on a loaded real network.
- ``loopback-defaults``: Kafka's defaults, clients on loopback.
- ``loopback-fast-followers``: the ``fast-followers`` broker profile, clients on loopback.

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

from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.netem import LinkConditions, Toxiproxy, proxy_cluster, toxiproxy_server

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

    def describe(self) -> list[str]:
        lines = [f"scenario: {self.scenario.name} ({self.scenario.summary})"]
        if self.note:
            lines.append(self.note)
        if self.link is not None:
            lines.append(f"network: Toxiproxy {self.link.describe()}")
        else:
            lines.append("network: loopback (no emulation)")
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
    say: Callable[[str], None],
) -> AsyncIterator[Environment]:
    """Start a local cluster (and Toxiproxy) for ``scenario``; stop everything after."""
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
        if binary is None:
            yield Environment(scenario, direct, direct, None, cluster.non_default_settings(), note)
            return
        link = link_for(rate, record_size, brokers)
        toxiproxy = Toxiproxy(binary, directory / "toxiproxy.log")
        await anyio.to_thread.run_sync(toxiproxy.start)
        try:
            bootstrap = await anyio.to_thread.run_sync(proxy_cluster, toxiproxy, cluster, link)
            yield Environment(scenario, bootstrap, direct, link, cluster.non_default_settings())
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(toxiproxy.stop)
    finally:
        say("stopping the cluster...")
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(cluster.down)
