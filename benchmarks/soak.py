"""A soak under churn: hours of load on a local 3-broker cluster with faults on a schedule,
checked all along for records lost, duplicated or reordered, and for resources that grow.

The cluster (Kafka 4.4 from the harness's jars) has a PLAINTEXT listener and a
SASL_PLAINTEXT one with OAUTHBEARER, whose tokens come from the harness's OIDC provider
(short tokens, short ``connections.max.reauth.ms``). The load, all in this process:

* idempotent producers (acks=all, PLAINTEXT through Toxiproxy) writing numbered records to ``soak-data``,
  each partition's records numbered 0, 1, 2, ...;
* a transactional copy over SASL/OAUTHBEARER: a read_committed consumer of ``soak-data``
  and a transactional producer writing each record to ``soak-copy`` with its offsets
  (exactly once);
* a classic group and a KIP-848 group of several members reading ``soak-data``
  (end-to-end latency);
* a share group of two members reading ``soak-data``.

The producers and the classic group and share group members reach the brokers through
Toxiproxy (the harness's), so one broker can be cut off from them. Faults on a schedule
(periods scaled by ``--scale``): every leader moved (Kafka's own election through the
harness), one broker SIGKILLed and restarted, a rolling restart of all three, a member of
each group joining and leaving, the token endpoint down, one broker cut off from the
clients (a network partition).

Checked and reported: per partition of ``soak-data``, acknowledged records missing from the
log, records in it twice, records out of order; on ``soak-copy``, every source record up to
the copied position exactly once; produce and end-to-end latency p50/p99/p99.9 per window;
the process's RSS, open file descriptors and asyncio tasks, the clients' connections per
broker, the producers' buffered bytes and the event loop's lag (p99.9) per window; every
error the application saw, by type. A JSON report and, with matplotlib, plots.

    python benchmarks/soak.py --minutes 60                 # the schedule's own periods
    python benchmarks/soak.py --minutes 5 --scale 0.1      # every period a tenth as long
    python benchmarks/soak.py --short                      # every fault once (the test's run)
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer  # noqa: E402
from aiokafka_lead.admin import AdminClient, NewTopic  # noqa: E402
from aiokafka_lead.auth.oidc import OIDCTokenProvider  # noqa: E402
from aiokafka_lead.bench.plot import NO_PLOT, can_plot  # noqa: E402
from aiokafka_lead.bench.soak_load import (  # noqa: E402
    COPY,
    DATA,
    PARTITIONS,
    Ledger,
    copy_exactly_once,
    group_member,
    loop_lag,
    produce,
    progress,
    sample,
    share_member,
)
from aiokafka_lead.bench.soak_report import build_report, plot, read_all  # noqa: E402
from aiokafka_lead.errors import KafkaError  # noqa: E402
from aiokafka_lead.structs import TopicPartition  # noqa: E402
from aiokafka_lead.testing.chaos import ChaosOp, ChaosRunner, ChaosStep  # noqa: E402
from aiokafka_lead.testing.cluster import KafkaCluster  # noqa: E402
from aiokafka_lead.testing.netem import LinkConditions, Toxiproxy, proxy_cluster, toxiproxy_server  # noqa: E402
from aiokafka_lead.testing.oidc import AUDIENCE, OIDCServer, running_oidc_server  # noqa: E402
from aiokafka_lead.testing.share_cluster import SHARE_TEST_PROPERTIES  # noqa: E402

CLIENT_ID, CLIENT_SECRET = "soak-client", "soak-secret"
#: the schedule's periods at --scale 1 (seconds)
PERIODS = {
    "leader_move": 30.0,
    "kill": 300.0,
    "rolling_restart": 1200.0,
    "members": 120.0,
    "token_down": 900.0,
    "partition": 600.0,
}
TOKEN_DOWN_S = 30.0
PARTITION_S = 10.0
#: the clients' link through Toxiproxy while it is up: no delay, no bandwidth limit to speak of
OPEN_LINK = LinkConditions(latency_ms=0, jitter_ms=0, bandwidth_kb_s=1_000_000)


@dataclass
class Settings:
    minutes: float = 60.0
    scale: float = 1.0
    rate: float = 200.0  # records/s over all producers
    producers: int = 2
    members: int = 3  # per group
    token_s: float = 60.0
    reauth_ms: int = 10_000
    short: bool = False
    heap_frames: int = 0  # > 0: trace allocations (tracemalloc) with this many frames
    malloc_trim: bool = False  # sample the RSS also after glibc's malloc_trim(0)
    out: Path = ROOT / "benchmarks" / "results" / "soak.json"

    @classmethod
    def short_run(cls, out: Path) -> Settings:
        """Every fault once, in a few minutes (the test suite's run)."""
        return cls(minutes=0, rate=200.0, members=2, token_s=6.0, reauth_ms=3000, short=True, out=out)


# ---------------------------------------------------------------------------- the faults
class Faults:
    """The fault schedule; one fault that changes the cluster at a time."""

    def __init__(self, site: Site, ledger: Ledger, settings: Settings) -> None:
        self.cluster = site.cluster
        self.oidc = site.oidc
        self.toxiproxy = site.toxiproxy
        self.ledger = ledger
        self.settings = settings
        self.lock = anyio.Lock()
        self.extra_members: list[anyio.Event] = []

    async def timed(self, what: str, action: Callable[[], Awaitable[None]]) -> None:
        async with self.lock:
            start = self.ledger.now()
            print(f"[{start:7.1f} s] fault: {what}", flush=True)
            await action()
            self.ledger.faults.append((start, self.ledger.now(), what))

    async def chaos(self, *steps: ChaosStep) -> None:
        runner = ChaosRunner(self.cluster, [DATA, COPY], schedule=steps, pause_s=0.5)
        await runner.run()

    async def leader_move(self) -> None:
        await self.timed("every leader moved", lambda: self.chaos(ChaosStep(ChaosOp.ROTATE_LEADERS)))

    async def kill(self, node: int) -> None:
        await self.timed(
            f"broker {node} SIGKILLed and restarted", lambda: self.chaos(ChaosStep(ChaosOp.KILL_START, node))
        )

    async def rolling_restart(self) -> None:
        steps = [ChaosStep(ChaosOp.STOP_START, n) for n in self.cluster.node_ids]
        await self.timed("rolling restart", lambda: self.chaos(*steps))

    async def token_down(self, seconds: float) -> None:
        async def down() -> None:
            self.oidc.fail_next(1_000_000, 503)
            try:
                await anyio.sleep(seconds)
            finally:
                self.oidc.fail_next(0, 503)

        await self.timed(f"token endpoint down for {seconds:.0f} s", down)

    async def partition(self, node: int, seconds: float) -> None:
        """The clients' link to one broker cut (Toxiproxy), then restored."""

        async def cut() -> None:
            name = f"broker-{node}"
            await anyio.to_thread.run_sync(self.toxiproxy.set_enabled, name, False)
            try:
                await anyio.sleep(seconds)
            finally:
                await anyio.to_thread.run_sync(self.toxiproxy.set_enabled, name, True)

        await self.timed(f"broker {node} cut off from the clients for {seconds:.0f} s", cut)


# ------------------------------------------------------------------------------ the heap
class HeapWatch:
    """With ``--heap-frames N``: the Python heap's growth between a snapshot at a sixth of the
    run (minute 10 of 60) and the end, by the allocating call stack. Tracing slows the
    process, so its latency and lag figures are not comparable with an untraced run."""

    def __init__(self, frames: int) -> None:
        self.frames = frames
        self.first: tracemalloc.Snapshot | None = None
        if frames:
            tracemalloc.start(frames)

    async def snapshot_after(self, seconds: float, stop: anyio.Event) -> None:
        if not self.frames:
            return
        with anyio.move_on_after(seconds):
            await stop.wait()
        if not stop.is_set():
            self.first = tracemalloc.take_snapshot()
            traced = tracemalloc.get_traced_memory()[0] / 2**20
            print(f"heap snapshot taken: {traced:.1f} MiB traced", flush=True)

    def growth(self, top: int = 30) -> list[dict[str, Any]]:
        """The call stacks whose live memory grew most since the first snapshot."""
        if self.first is None:
            return []
        last = tracemalloc.take_snapshot()
        rows = []
        for stat in last.compare_to(self.first, "traceback")[:top]:
            rows.append(
                {
                    "kib": round(stat.size_diff / 1024, 1),
                    "blocks": stat.count_diff,
                    "stack": [f"{f.filename}:{f.lineno}" for f in stat.traceback],
                }
            )
        return rows


# -------------------------------------------------------------------------------- the run
@dataclass
class Site:
    """Where the soak runs: the cluster, its identity provider, the proxies in front of it."""

    cluster: KafkaCluster
    oidc: OIDCServer
    toxiproxy: Toxiproxy
    proxied: str  # the bootstrap servers through the proxies


async def soak(settings: Settings) -> dict[str, Any]:
    ledger = Ledger()
    binary, why = await anyio.to_thread.run_sync(toxiproxy_server)
    if binary is None:
        raise RuntimeError(f"the soak cuts a broker off with Toxiproxy: {why}")
    with (
        running_oidc_server(clients={CLIENT_ID: CLIENT_SECRET}, lifetime_s=settings.token_s) as oidc,
        tempfile.TemporaryDirectory(prefix="soak-") as tmp,
    ):
        cluster = KafkaCluster(
            Path(tmp),
            3,
            listeners=("PLAINTEXT", "SASL_PLAINTEXT"),
            sasl_mechanisms=("OAUTHBEARER",),
            oauth_jwks_url=oidc.jwks_url,
            oauth_audience=AUDIENCE,
            oauth_issuer=oidc.issuer,
            extra_properties={"connections.max.reauth.ms": str(settings.reauth_ms), **SHARE_TEST_PROPERTIES},
            profile="testing",
            proxied=True,
            stop_at_exit=True,
        )
        print("starting a 3-broker cluster ...", flush=True)
        await anyio.to_thread.run_sync(lambda: cluster.up(timeout=180))
        toxiproxy = Toxiproxy(binary, Path(tmp) / "toxiproxy.log")
        try:
            await anyio.to_thread.run_sync(toxiproxy.start)
            proxied = await anyio.to_thread.run_sync(proxy_cluster, toxiproxy, cluster, OPEN_LINK)
            return await _run(settings, Site(cluster, oidc, toxiproxy, proxied), ledger)
        finally:
            await anyio.to_thread.run_sync(toxiproxy.stop)
            await anyio.to_thread.run_sync(cluster.down)


async def _run(settings: Settings, site: Site, ledger: Ledger) -> dict[str, Any]:
    cluster, oidc = site.cluster, site.oidc
    plain = cluster.bootstrap("PLAINTEXT")
    sasl = {
        "bootstrap_servers": cluster.bootstrap("SASL_PLAINTEXT"),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauth_token_provider": OIDCTokenProvider(oidc.token_url, CLIENT_ID, CLIENT_SECRET, retries=1),
    }
    async with AdminClient(bootstrap_servers=plain) as admin:
        await admin.create_topics([NewTopic(DATA, PARTITIONS, 3), NewTopic(COPY, PARTITIONS, 3)])
    stop_load, stop_probes = anyio.Event(), anyio.Event()
    faults = Faults(site, ledger, settings)
    producers = [
        AIOKafkaProducer(bootstrap_servers=site.proxied, acks="all", linger_ms=5)
        for _ in range(settings.producers)
    ]
    copier = AIOKafkaProducer(transactional_id="soak-copy", **sasl)
    source = AIOKafkaConsumer(
        group_id="soak-copy",
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **sasl,
    )
    for client in (*producers, copier, source):
        await client.start()
    clients: list[Any] = [*producers, copier, source]

    def classic() -> AIOKafkaConsumer[bytes, bytes]:
        c = AIOKafkaConsumer(
            bootstrap_servers=site.proxied, group_id="soak-classic", auto_offset_reset="latest"
        )
        return c

    def kip848() -> AIOKafkaConsumer[bytes, bytes]:
        c = AIOKafkaConsumer(
            bootstrap_servers=plain,
            group_id="soak-848",
            group_protocol="consumer",
            auto_offset_reset="latest",
        )
        return c

    started = time.monotonic()
    stop_copy = anyio.Event()
    copied_to: dict[int, int] = {}
    heap = HeapWatch(settings.heap_frames)
    try:
        async with anyio.create_task_group() as load:
            load.start_soon(heap.snapshot_after, settings.minutes * 60 / 6, stop_probes)
            load.start_soon(loop_lag, ledger, stop_probes)
            load.start_soon(
                functools.partial(sample, trim=settings.malloc_trim), ledger, clients, producers, stop_probes
            )
            load.start_soon(progress, ledger, stop_probes)
            for i, p in enumerate(producers):
                own = [n for n in range(PARTITIONS) if n % len(producers) == i]
                load.start_soon(produce, p, own, ledger, settings.rate / len(producers), stop_load)
            source.subscribe([DATA])
            load.start_soon(copy_exactly_once, source, copier, ledger, stop_copy)
            for i in range(settings.members):
                load.start_soon(group_member, classic, ledger, stop_load, f"classic member {i}", clients)
                load.start_soon(group_member, kip848, ledger, stop_load, f"KIP-848 member {i}", clients)
            for _ in range(2):
                load.start_soon(share_member, site.proxied, ledger, stop_load)
            await anyio.sleep(5)  # warm up
            members = Members(load, classic, kip848, stop_load, clients)
            if settings.short:
                await _every_fault_once(faults, members)
            else:
                await _schedule(faults, members, started)
            await anyio.sleep(5)  # traffic on the healed cluster
            stop_load.set()
            for p in producers:
                await p.flush()
            copied_to = await _copy_caught_up(plain)
            stop_copy.set()
            stop_probes.set()
    finally:
        for client in (*producers, copier, source):
            await client.stop()
        await ChaosRunner(cluster, [DATA, COPY]).heal()
    growth = heap.growth()
    data = await read_all(plain, DATA)
    copy = await read_all(plain, COPY)
    report = build_report(
        settings, ledger, data=data, copy=copy, copied_to=copied_to, seconds=time.monotonic() - started
    )
    if settings.heap_frames:
        report["heap_growth"] = growth
    return report


@dataclass
class Members:
    """How the members-joining fault adds members: the load's task group and the groups'
    member factories; ``stop`` ends the load; ``sampled``: the clients the probes sample."""

    load: Any
    classic: Callable[[], AIOKafkaConsumer[bytes, bytes]]
    kip848: Callable[[], AIOKafkaConsumer[bytes, bytes]]
    stop: anyio.Event
    sampled: list[Any]

    async def churn(self, ledger: Ledger) -> None:
        """A member of each group joins, works a few seconds, and leaves."""
        leave = anyio.Event()
        start = ledger.now()
        print(f"[{start:7.1f} s] fault: a member of each group joins, then leaves", flush=True)
        self.load.start_soon(
            group_member, self.classic, ledger, leave, "joining classic member", self.sampled
        )
        self.load.start_soon(group_member, self.kip848, ledger, leave, "joining KIP-848 member", self.sampled)
        with anyio.move_on_after(8):
            await self.stop.wait()
        leave.set()
        ledger.faults.append((start, ledger.now(), "members joined and left"))


async def _every_fault_once(faults: Faults, members: Members) -> None:
    await faults.leader_move()
    await faults.kill(2)
    await members.churn(faults.ledger)
    await faults.token_down(max(faults.settings.token_s * 1.5, 5))
    await faults.partition(3, 6)
    await faults.rolling_restart()


async def _schedule(faults: Faults, members: Members, started: float) -> None:
    """Each fault at its own period (scaled) until the run's minutes are over."""
    settings = faults.settings
    period = {name: p * settings.scale for name, p in PERIODS.items()}
    end = started + settings.minutes * 60
    due = {name: started + p for name, p in period.items()}
    kills = 0
    while time.monotonic() < end:
        name = min(due, key=lambda n: due[n])
        await anyio.sleep(max(due[name] - time.monotonic(), 0))
        if time.monotonic() >= end:
            break
        if name == "leader_move":
            await faults.leader_move()
        elif name == "kill":
            kills += 1
            await faults.kill(1 + kills % 3)
        elif name == "rolling_restart":
            await faults.rolling_restart()
        elif name == "members":
            await members.churn(faults.ledger)
        elif name == "token_down":
            await faults.token_down(TOKEN_DOWN_S * settings.scale)
        elif name == "partition":
            await faults.partition(1 + kills % 3, PARTITION_S * settings.scale)
        due[name] = time.monotonic() + period[name]


async def _copy_caught_up(plain: str) -> dict[int, int]:
    """The copy's committed position per partition, once it reached the source's end (or
    after two minutes: the report then shows what was not copied)."""
    tps = [TopicPartition(DATA, p) for p in range(PARTITIONS)]
    async with AIOKafkaConsumer(bootstrap_servers=plain, isolation_level="read_committed") as probe:
        ends = await probe.end_offsets(tps)
    positions: dict[int, int] = {}
    async with AdminClient(bootstrap_servers=plain) as admin:
        with anyio.move_on_after(120):
            while True:
                try:
                    committed = await admin.list_consumer_group_offsets("soak-copy", tps)
                except KafkaError:
                    committed = {}
                positions = {tp.partition: committed[tp].offset if tp in committed else 0 for tp in tps}
                if all(positions[tp.partition] >= ends[tp] for tp in tps):
                    break
                await anyio.sleep(0.5)
    return positions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=60.0, help="how long the load runs")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiplies every period of the fault schedule"
    )
    parser.add_argument("--rate", type=float, default=200.0, help="records/s over all producers")
    parser.add_argument("--short", action="store_true", help="every fault once, a few minutes")
    parser.add_argument("--out", type=Path, default=Settings.out, help="the JSON report (plots beside it)")
    parser.add_argument(
        "--heap-frames",
        type=int,
        default=0,
        help="trace the Python heap (tracemalloc, this many frames a stack) and report what grew",
    )
    parser.add_argument(
        "--malloc-trim",
        action="store_true",
        help="sample the RSS also after glibc's malloc_trim(0): memory in use against memory kept",
    )
    args = parser.parse_args()
    settings = (
        Settings.short_run(args.out)
        if args.short
        else Settings(minutes=args.minutes, scale=args.scale, rate=args.rate, out=args.out)
    )
    settings.heap_frames = args.heap_frames
    settings.malloc_trim = args.malloc_trim
    report = anyio.run(soak, settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(
        json.dumps(
            {
                k: v
                for k, v in report.items()
                if k not in ("samples", "errors", "produce_ms", "end_to_end_ms", "heap_growth")
            },
            indent=1,
        )
    )
    for row in report.get("heap_growth", [])[:15]:
        stack = " <- ".join(reversed(row["stack"][-3:]))
        print(f"{row['kib']:+10.1f} KiB {row['blocks']:+8d} blocks  {stack}")
    print(f"report: {args.out}")
    print(f"plot: {plot(report, args.out.with_suffix('.png'))}" if can_plot() else NO_PLOT)


if __name__ == "__main__":
    main()
