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
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
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
from aiokafka_lead.bench.stats import percentile  # noqa: E402
from aiokafka_lead.errors import KafkaError  # noqa: E402
from aiokafka_lead.share import AIOKafkaShareConsumer  # noqa: E402
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition  # noqa: E402
from aiokafka_lead.testing.chaos import ChaosOp, ChaosRunner, ChaosStep  # noqa: E402
from aiokafka_lead.testing.cluster import KafkaCluster  # noqa: E402
from aiokafka_lead.testing.netem import LinkConditions, Toxiproxy, proxy_cluster, toxiproxy_server  # noqa: E402
from aiokafka_lead.testing.oidc import AUDIENCE, OIDCServer, running_oidc_server  # noqa: E402
from aiokafka_lead.testing.share_cluster import SHARE_TEST_PROPERTIES  # noqa: E402

DATA, COPY = "soak-data", "soak-copy"
PARTITIONS = 6
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
WINDOW_S = 300.0
SAMPLE_S = 5.0


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
    out: Path = ROOT / "benchmarks" / "results" / "soak.json"

    @classmethod
    def short_run(cls, out: Path) -> Settings:
        """Every fault once, in a few minutes (the test suite's run)."""
        return cls(minutes=0, rate=200.0, members=2, token_s=6.0, reauth_ms=3000, short=True, out=out)


@dataclass
class Ledger:
    """What the load did, for the checks and the report."""

    started: float = field(default_factory=time.monotonic)
    next_seq: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    acked: dict[int, dict[int, int]] = field(default_factory=lambda: defaultdict(dict))  # p -> seq -> offset
    failed: Counter[str] = field(default_factory=Counter)
    errors: list[tuple[float, str, str]] = field(default_factory=list)  # (t, where, error)
    produce_ms: list[tuple[float, float]] = field(default_factory=list)  # (t, latency)
    e2e_ms: list[tuple[float, float]] = field(default_factory=list)
    copied: int = 0
    shared: int = 0  # records the share group acquired
    aborted: Counter[str] = field(default_factory=Counter)
    faults: list[tuple[float, float, str]] = field(default_factory=list)  # (start, end, what)
    samples: list[dict[str, Any]] = field(default_factory=list)
    loop_lag_ms: list[tuple[float, float]] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.started

    def error(self, where: str, exc: BaseException) -> None:
        self.errors.append((self.now(), where, f"{type(exc).__name__}: {exc}"[:300]))


def encode(partition: int, seq: int) -> bytes:
    return f"{partition}:{seq}".encode()


def decode(value: bytes) -> tuple[int, int]:
    partition, seq = value.split(b":")
    return int(partition), int(seq)


# ------------------------------------------------------------------------------- the load
async def produce(
    producer: AIOKafkaProducer, partitions: list[int], ledger: Ledger, rate: float, stop: anyio.Event
) -> None:
    """Numbered records, round-robin over this producer's own ``partitions`` (one writer per
    partition, so its order is the log's), paced at ``rate`` records/s."""
    n = 0
    t0 = time.monotonic()
    async with anyio.create_task_group() as tg:
        while not stop.is_set():
            partition = partitions[n % len(partitions)]
            seq = ledger.next_seq[partition]
            ledger.next_seq[partition] += 1
            sent = time.monotonic()
            try:
                handle = await producer.send(DATA, encode(partition, seq), partition=partition)
            except KafkaError as exc:
                ledger.error("produce", exc)
                ledger.failed[type(exc).__name__] += 1
                continue
            tg.start_soon(_acked, handle, partition, seq, sent, ledger)
            n += 1
            ahead = t0 + n / rate - time.monotonic()
            if ahead > 0:
                await anyio.sleep(ahead)


async def _acked(handle: Any, partition: int, seq: int, sent: float, ledger: Ledger) -> None:
    try:
        metadata = await handle
    except KafkaError as exc:
        ledger.error("delivery", exc)
        ledger.failed[type(exc).__name__] += 1
        return
    ledger.acked[partition][seq] = metadata.offset
    ledger.produce_ms.append((ledger.now(), (time.monotonic() - sent) * 1000))


async def copy_exactly_once(
    consumer: AIOKafkaConsumer[bytes, bytes], producer: AIOKafkaProducer, ledger: Ledger, stop: anyio.Event
) -> None:
    """read_committed -> transactional producer, each poll's records and offsets one transaction."""
    while not stop.is_set():
        try:
            batch = await consumer.getmany(timeout_ms=200, max_records=500)
        except KafkaError as exc:
            ledger.error("copy poll", exc)
            continue
        if not batch:
            continue
        try:
            async with producer.transaction():
                for tp, records in batch.items():
                    for r in records:
                        await producer.send(COPY, r.value, partition=tp.partition)
                offsets = {tp: OffsetAndMetadata(rs[-1].offset + 1, "") for tp, rs in batch.items()}
                await producer.send_offsets_to_transaction(offsets, "soak-copy")
            ledger.copied += sum(len(rs) for rs in batch.values())
        except KafkaError as exc:
            ledger.aborted[type(exc).__name__] += 1
            ledger.error("copy transaction", exc)
            for tp in batch:  # read the aborted records again
                committed = await _committed(consumer, tp)
                consumer.seek(tp, committed)


async def _committed(consumer: AIOKafkaConsumer[bytes, bytes], tp: TopicPartition) -> int:
    for _ in range(100):
        try:
            offset = await consumer.committed(tp)
            return offset if offset is not None else 0
        except KafkaError:
            await anyio.sleep(0.2)
    raise RuntimeError(f"no committed offset for {tp}")


async def group_member(
    make: Callable[[], AIOKafkaConsumer[bytes, bytes]], ledger: Ledger, stop: anyio.Event, where: str
) -> None:
    """A group member reading soak-data until ``stop``: end-to-end latency."""
    async with make() as consumer:
        consumer.subscribe([DATA])
        while not stop.is_set():
            try:
                batch = await consumer.getmany(timeout_ms=200)
            except KafkaError as exc:
                ledger.error(where, exc)
                continue
            now_ms = time.time() * 1000
            for records in batch.values():
                for r in records[-5:]:  # a sample per batch keeps the ledger small
                    ledger.e2e_ms.append((ledger.now(), now_ms - r.timestamp))


async def share_member(bootstrap: str, ledger: Ledger, stop: anyio.Event) -> None:
    """A member of the share group reading soak-data (implicit acknowledgement)."""
    async with AIOKafkaShareConsumer(bootstrap_servers=bootstrap, group_id="soak-share") as consumer:
        consumer.subscribe([DATA])
        while not stop.is_set():
            try:
                batch = await consumer.getmany(timeout_ms=200)
            except KafkaError as exc:
                ledger.error("share member", exc)
                continue
            ledger.shared += sum(len(records) for records in batch.values())


# ---------------------------------------------------------------------------- the probes
async def loop_lag(ledger: Ledger, stop: anyio.Event) -> None:
    tick = 0.01
    while not stop.is_set():
        before = time.monotonic()
        await anyio.sleep(tick)
        ledger.loop_lag_ms.append((ledger.now(), max(time.monotonic() - before - tick, 0.0) * 1000))


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _connections(clients: list[Any]) -> dict[str, int]:
    per_node: Counter[str] = Counter()
    for client in clients:
        try:
            nodes = client._core.pool._nodes
        except KafkaError:  # a member that left, or not started yet
            continue
        for state in nodes.values():
            conn = state.conn
            if conn is not None and not conn.closed:
                per_node[f"node {conn.node_id}" if conn.node_id >= 0 else "bootstrap"] += 1
    return dict(sorted(per_node.items()))


async def sample(
    ledger: Ledger, clients: list[Any], producers: list[AIOKafkaProducer], stop: anyio.Event
) -> None:
    while not stop.is_set():
        ledger.samples.append(
            {
                "t": round(ledger.now(), 1),
                "rss_mib": round(_rss_mib(), 1),
                "fds": _fds(),
                "tasks": len(asyncio.all_tasks()),
                "connections": _connections(clients),
                "buffered_bytes": sum(p.metrics()["buffer_used"] for p in producers),
            }
        )
        with anyio.move_on_after(SAMPLE_S):
            await stop.wait()


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


# ------------------------------------------------------------------------------ the checks
async def read_all(bootstrap: str, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """Every committed record of ``topic``: partition -> [(offset, value)]."""
    out: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    async with AIOKafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", auto_offset_reset="earliest"
    ) as consumer:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)

        async def behind() -> bool:
            return any([await consumer.position(tp) < ends[tp] for tp in tps])

        while await behind():
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                out[tp.partition].extend((r.offset, r.value) for r in records if r.value is not None)
    return out


def check_data(ledger: Ledger, log: dict[int, list[tuple[int, bytes]]]) -> dict[str, int]:
    lost = duplicated = reordered = 0
    for partition in range(PARTITIONS):
        seen: Counter[int] = Counter()
        last = -1
        for _, value in log.get(partition, []):
            p, seq = decode(value)
            assert p == partition, (p, partition)
            seen[seq] += 1
            reordered += seq < last
            last = max(last, seq)
        duplicated += sum(n - 1 for n in seen.values() if n > 1)
        lost += sum(1 for seq in ledger.acked[partition] if seq not in seen)
    return {"lost": lost, "duplicated": duplicated, "reordered": reordered}


def check_copy(
    data: dict[int, list[tuple[int, bytes]]],
    copy: dict[int, list[tuple[int, bytes]]],
    copied_to: dict[int, int],
) -> dict[str, int]:
    """Every source record below the copy's committed position exactly once in the copy."""
    missing = duplicated = extra = 0
    for partition in range(PARTITIONS):
        wanted = Counter(v for o, v in data.get(partition, []) if o < copied_to.get(partition, 0))
        got = Counter(v for _, v in copy.get(partition, []))
        missing += sum(1 for v in wanted if v not in got)
        duplicated += sum(n - 1 for n in got.values() if n > 1)
        extra += sum(1 for v in got if v not in wanted)
    return {"copy_missing": missing, "copy_duplicated": duplicated, "copy_not_in_source": extra}


def windows(points: list[tuple[float, float]], width: float) -> list[dict[str, float]]:
    out = []
    by: dict[int, list[float]] = defaultdict(list)
    for t, v in points:
        by[int(t // width)].append(v)
    for w in sorted(by):
        values = sorted(by[w])
        out.append(
            {
                "window_start_s": w * width,
                "count": len(values),
                "p50": round(percentile(values, 50), 2),
                "p99": round(percentile(values, 99), 2),
                "p99.9": round(percentile(values, 99.9), 2),
            }
        )
    return out


def growth(samples: list[dict[str, Any]], settle_s: float) -> dict[str, float | None]:
    """Percent change of RSS, descriptors, tasks and connections from the first sample after
    ``settle_s`` (the first 10 minutes of a long run) to the last one (the target: under 5%)."""
    later = [s for s in samples if s["t"] >= settle_s]
    if len(later) < 2:
        return {}

    def value(sample: dict[str, Any], key: str) -> float:
        return float(sum(sample[key].values()) if key == "connections" else sample[key])

    out: dict[str, float | None] = {}
    for key in ("rss_mib", "fds", "tasks", "connections"):
        first, last = value(later[0], key), value(later[-1], key)
        out[key] = round((last - first) / first * 100, 1) if first else None
    return out


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
        clients.append(c)
        return c

    def kip848() -> AIOKafkaConsumer[bytes, bytes]:
        c = AIOKafkaConsumer(
            bootstrap_servers=plain,
            group_id="soak-848",
            group_protocol="consumer",
            auto_offset_reset="latest",
        )
        clients.append(c)
        return c

    started = time.monotonic()
    stop_copy = anyio.Event()
    copied_to: dict[int, int] = {}
    try:
        async with anyio.create_task_group() as load:
            load.start_soon(loop_lag, ledger, stop_probes)
            load.start_soon(sample, ledger, clients, producers, stop_probes)
            load.start_soon(progress, ledger, stop_probes)
            for i, p in enumerate(producers):
                own = [n for n in range(PARTITIONS) if n % len(producers) == i]
                load.start_soon(produce, p, own, ledger, settings.rate / len(producers), stop_load)
            source.subscribe([DATA])
            load.start_soon(copy_exactly_once, source, copier, ledger, stop_copy)
            for i in range(settings.members):
                load.start_soon(group_member, classic, ledger, stop_load, f"classic member {i}")
                load.start_soon(group_member, kip848, ledger, stop_load, f"KIP-848 member {i}")
            for _ in range(2):
                load.start_soon(share_member, site.proxied, ledger, stop_load)
            await anyio.sleep(5)  # warm up
            members = Members(load, classic, kip848, stop_load)
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
    data = await read_all(plain, DATA)
    copy = await read_all(plain, COPY)
    return _report(
        settings, ledger, data=data, copy=copy, copied_to=copied_to, seconds=time.monotonic() - started
    )


@dataclass
class Members:
    """How the members-joining fault adds members: the load's task group and the groups'
    member factories; ``stop`` ends the load."""

    load: Any
    classic: Callable[[], AIOKafkaConsumer[bytes, bytes]]
    kip848: Callable[[], AIOKafkaConsumer[bytes, bytes]]
    stop: anyio.Event

    async def churn(self, ledger: Ledger) -> None:
        """A member of each group joins, works a few seconds, and leaves."""
        leave = anyio.Event()
        start = ledger.now()
        print(f"[{start:7.1f} s] fault: a member of each group joins, then leaves", flush=True)
        self.load.start_soon(group_member, self.classic, ledger, leave, "joining classic member")
        self.load.start_soon(group_member, self.kip848, ledger, leave, "joining KIP-848 member")
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


async def progress(ledger: Ledger, stop: anyio.Event) -> None:
    while not stop.is_set():
        with anyio.move_on_after(10):
            await stop.wait()
        acked = sum(len(v) for v in ledger.acked.values())
        print(
            f"[{ledger.now():7.1f} s] acknowledged {acked}, copied {ledger.copied}, "
            f"errors {len(ledger.errors)}, RSS {_rss_mib():.0f} MiB",
            flush=True,
        )


def _report(
    settings: Settings, ledger: Ledger, *, data: Any, copy: Any, copied_to: dict[int, int], seconds: float
) -> dict[str, Any]:
    lag = sorted(v for _, v in ledger.loop_lag_ms)
    width = 30.0 if settings.short else WINDOW_S
    report: dict[str, Any] = {
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(settings).items()},
        "seconds": round(seconds, 1),
        "load_avg": os.getloadavg(),
        "acknowledged": sum(len(v) for v in ledger.acked.values()),
        "failed_by_error": dict(ledger.failed),
        **check_data(ledger, data),
        "copied": sum(copied_to.values()),
        **check_copy(data, copy, copied_to),
        "copy_aborts": dict(ledger.aborted),
        "share_group_records": ledger.shared,
        "faults": [{"start_s": round(a, 1), "end_s": round(b, 1), "what": w} for a, b, w in ledger.faults],
        "errors_by_type": dict(Counter(e.split(":")[0] for _, _, e in ledger.errors)),
        "errors": [{"t": round(t, 1), "where": w, "error": e} for t, w, e in ledger.errors[:200]],
        "produce_ms": windows(ledger.produce_ms, width),
        "end_to_end_ms": windows(ledger.e2e_ms, width),
        "loop_lag_ms_p99.9": round(percentile(lag, 99.9), 1) if lag else None,
        "loop_lag_ms": windows(ledger.loop_lag_ms, width),
        "growth_after_warm_up": growth(ledger.samples, settle_s=60.0 if settings.short else 600.0),
        "samples": ledger.samples,
    }
    return report


def plot(report: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = report["samples"]
    ts = [s["t"] / 60 for s in samples]
    fig, axes = plt.subplots(4, 1, figsize=(11, 11), sharex=True)
    for key, ax in zip(("rss_mib", "fds", "tasks"), axes[:3], strict=False):
        ax.plot(ts, [s[key] for s in samples])
        ax.set_ylabel(key)
    for series, label in (("produce_ms", "produce p99"), ("end_to_end_ms", "end-to-end p99")):
        rows = report[series]
        axes[3].plot(
            [r["window_start_s"] / 60 for r in rows], [r["p99"] for r in rows], marker="o", label=label
        )
    axes[3].set_ylabel("ms")
    axes[3].legend()
    for ax in axes:
        for fault in report["faults"]:
            ax.axvspan(fault["start_s"] / 60, fault["end_s"] / 60, color="red", alpha=0.1)
    axes[3].set_xlabel("minutes (faults shaded)")
    fig.suptitle(f"soak: {report['seconds'] / 60:.0f} min, load average {report['load_avg'][0]:.1f}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=60.0, help="how long the load runs")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiplies every period of the fault schedule"
    )
    parser.add_argument("--rate", type=float, default=200.0, help="records/s over all producers")
    parser.add_argument("--short", action="store_true", help="every fault once, a few minutes")
    parser.add_argument("--out", type=Path, default=Settings.out, help="the JSON report (plots beside it)")
    args = parser.parse_args()
    settings = (
        Settings.short_run(args.out)
        if args.short
        else Settings(minutes=args.minutes, scale=args.scale, rate=args.rate, out=args.out)
    )
    report = anyio.run(soak, settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(
        json.dumps(
            {
                k: v
                for k, v in report.items()
                if k not in ("samples", "errors", "produce_ms", "end_to_end_ms")
            },
            indent=1,
        )
    )
    print(f"report: {args.out}")
    print(f"plot: {plot(report, args.out.with_suffix('.png'))}" if can_plot() else NO_PLOT)


if __name__ == "__main__":
    main()
