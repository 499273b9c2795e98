"""The share-group benchmark: records/s of a share group, aiokafka_lead against Java's
KafkaShareConsumer and confluent-kafka's preview ShareConsumer.

Per partition count (``--partitions``, default 1 and 12) one topic is filled with
``--records`` records of ``--size`` bytes. Then per client, member count (``--members``,
default 1, 4, 8) and run, a fresh share group (``share.auto.offset.reset=earliest``) reads
the whole topic: the member processes (implicit acknowledgement) join and wait; once the
group shows all of them with an assignment they are told to start at the same moment. The
rate is the records they got together divided by the time from that moment to the last
record any of them got (a member stops after ``--idle-ms`` without records). Medians
(min-max) of ``--runs`` runs; the client order rotates between runs. A local cluster runs
the share-test settings (``testing/share_cluster.py``: 1 s heartbeats, so members join fast).

Latency (``--latency-members``, default 4; 0 leaves it out): per client and partition count,
the members join an empty topic and start; then records are produced at ``--latency-rate``
records/s for ``--latency-seconds``, each with its scheduled time as its timestamp, and
every member notes, per record, the wall-clock ms from that timestamp to the record's
delivery to it (implicit acknowledgement accepts it at the member's next poll). p50, p99 and
max over all members, medians (min-max) over the runs. With matplotlib a plot is written
beside the JSON.

    python benchmarks/share_groups.py                          # starts a local 1-node cluster
    python benchmarks/share_groups.py --records 2000 --members 1,2 --partitions 1 --runs 1 \
        --latency-seconds 3
    python benchmarks/share_groups.py --bootstrap-server H:P --clients ours,java

Writes benchmarks/results/share_groups.json and docs/img/share_groups.png, and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.admin.types import ConfigResource
from aiokafka_lead.bench import share_java
from aiokafka_lead.bench.children import peer_versions, save_bars, say
from aiokafka_lead.bench.plot import NO_PLOT, can_plot
from aiokafka_lead.bench.stats import percentile
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.share_cluster import SHARE_TEST_PROPERTIES

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CLIENT = ROOT / "benchmarks" / "share_groups_client.py"
LABELS = {
    "ours": "aiokafka_lead",
    "java": "Java KafkaShareConsumer",
    "confluent": "confluent-kafka (preview)",
}


async def fill(bootstrap: str, topic: str, partitions: int, records: int, size: int) -> None:
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    value = b"x" * size
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks=1) as producer:
        for i in range(records):
            await producer.send(topic, value, partition=i % partitions)
        await producer.flush()


async def start_member(
    kind: str, bootstrap: str, topic: str, group: str, args: argparse.Namespace
) -> anyio.abc.Process:
    if kind == "java":
        cmd = share_java.command(
            args.classpath,
            bootstrap,
            topic,
            group,
            explicit=False,
            idle_ms=args.idle_ms,
            max_ms=args.max_ms,
            barrier=True,
        )
    else:
        cmd = [
            sys.executable,
            str(CLIENT),
            "--client",
            kind,
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
        ]
        cmd += ["--group", group, "--idle-ms", str(args.idle_ms), "--max-ms", str(args.max_ms)]
    return await anyio.open_process(cmd)


async def finish_member(
    kind: str, proc: anyio.abc.Process, lines: BufferedByteReceiveStream
) -> dict[str, Any]:
    """Read the member's output to its end: its result."""
    assert proc.stderr is not None
    result: dict[str, Any] | None = None
    while True:
        try:
            line = (await lines.receive_until(b"\n", 1 << 27)).decode()  # LATENCY: a number per record
        except (anyio.EndOfStream, anyio.IncompleteRead):
            break
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
        elif line.startswith("WALL "):
            _, count, first, last = line.split()
            result = {"count": int(count), "first": int(first) / 1000, "last": int(last) / 1000}
        elif line.startswith("LATENCY") and result is not None:
            result["latency_ms"] = [int(v) for v in line.split()[1:]]
    code = await proc.wait()
    if code != 0 or result is None:
        errors = (await proc.stderr.receive(1 << 16)).decode(errors="replace") if code else ""
        raise RuntimeError(f"{kind} member exited {code} without a result: {errors[-2000:]}")
    return result


async def all_assigned(admin: AdminClient, group: str, members: int) -> bool:
    try:
        [described] = await admin.describe_share_groups([group])
    except KafkaError:
        return False
    return len(described.members) == members and all(m.assignment for m in described.members)


async def paced(bootstrap: str, topic: str, partitions: int, args: argparse.Namespace) -> int:
    """``--latency-rate`` records/s for ``--latency-seconds``, each stamped with its scheduled
    time (so a record's latency counts from when it was due, not from when it was sent)."""
    count = int(args.latency_rate * args.latency_seconds)
    value = b"x" * args.size
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, acks=1) as producer:
        start = time.time()
        for i in range(count):
            due = start + i / args.latency_rate
            if (wait := due - time.time()) > 0:
                await anyio.sleep(wait)
            await producer.send(topic, value, partition=i % partitions, timestamp_ms=int(due * 1000))
        await producer.flush()
    return count


async def one_run(  # noqa: PLR0917 - one cell of the table
    kind: str,
    members: int,
    partitions: int,
    bootstrap: str,
    topic: str,
    args: argparse.Namespace,
    *,
    latency: bool = False,
) -> dict[str, Any]:
    """Every member joins, then all start at once on the filled topic (``latency``: on the
    empty topic, while records are produced at a fixed rate)."""
    group = f"bench-{kind}-{uuid.uuid4().hex[:8]}"
    results: list[dict[str, Any]] = []
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        await admin.alter_configs([ConfigResource("group", group, {"share.auto.offset.reset": "earliest"})])
        procs = [await start_member(kind, bootstrap, topic, group, args) for _ in range(members)]
        try:
            streams = []
            with anyio.fail_after(120):
                for proc in procs:
                    assert proc.stdout is not None
                    lines = BufferedByteReceiveStream(proc.stdout)
                    while (await lines.receive_until(b"\n", 1 << 20)).decode() != "READY":
                        pass
                    streams.append(lines)
                while not await all_assigned(admin, group, members):  # noqa: ASYNC110 - asks the broker
                    await anyio.sleep(0.2)
            go = time.time()
            for proc in procs:
                assert proc.stdin is not None
                await proc.stdin.send(b"GO\n")

            async def finish(proc: anyio.abc.Process, lines: BufferedByteReceiveStream) -> None:
                results.append(await finish_member(kind, proc, lines))

            produced = 0

            async def produce() -> None:
                nonlocal produced
                produced = await paced(bootstrap, topic, partitions, args)

            with anyio.fail_after(args.max_ms / 1000 + 60):
                async with anyio.create_task_group() as tg:
                    for proc, lines in zip(procs, streams, strict=True):
                        tg.start_soon(finish, proc, lines)
                    if latency:
                        tg.start_soon(produce)
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
        await admin.delete_share_groups([group])
    got = [r for r in results if r["count"]]
    count = sum(r["count"] for r in results)
    span = max(r["last"] for r in got) - go if got else 0.0
    run: dict[str, Any] = {
        "records": count,
        "records_per_s": count / span if span > 0 else float("nan"),
        "members_with_records": len(got),
    }
    if latency:
        lat = sorted(v for r in results for v in r.get("latency_ms", ()))
        run |= {"produced": produced, "p50_ms": percentile(lat, 50), "p99_ms": percentile(lat, 99)}
        run["max_ms"] = lat[-1] if lat else float("nan")
    return run


async def main_async(args: argparse.Namespace) -> int:
    kinds = args.clients.split(",")
    if "java" in kinds:
        args.classpath = await anyio.to_thread.run_sync(share_java.build)
    if "confluent" in kinds:
        import confluent_kafka

        if not hasattr(confluent_kafka, "ShareConsumer"):
            say("confluent-kafka has no ShareConsumer here: leaving it out")
            kinds.remove("confluent")
    cluster = None
    bootstrap = args.bootstrap_server
    if bootstrap is None:
        cluster = KafkaCluster(
            tempfile.mkdtemp(prefix="share-bench-"),
            1,
            benchmark=True,
            extra_properties=dict(SHARE_TEST_PROPERTIES),
            stop_at_exit=True,
        )
        await anyio.to_thread.run_sync(lambda: cluster.up(timeout=180))
        bootstrap = cluster.bootstrap()
    rows: list[dict[str, Any]] = []
    try:
        for partitions in (int(p) for p in args.partitions.split(",")):
            topic = f"share-bench-{partitions}p-{uuid.uuid4().hex[:6]}"
            say(f"filling {topic}: {args.records:,} records of {args.size} B over {partitions} partition(s)")
            await fill(bootstrap, topic, partitions, args.records, args.size)
            for members in (int(m) for m in args.members.split(",")):
                runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
                for i in range(args.runs):
                    order = kinds[i % len(kinds) :] + kinds[: i % len(kinds)]
                    for kind in order:
                        run = await one_run(kind, members, partitions, bootstrap, topic, args)
                        runs[kind].append(run)
                        say(
                            f"  {partitions:>2}p {members}m {LABELS[kind]:<26} run {i + 1}: "
                            f"{run['records_per_s']:>10,.0f} records/s ({run['records']:,} records, "
                            f"{run['members_with_records']} member(s) got some)"
                        )
                for kind, done in runs.items():
                    rates = [r["records_per_s"] for r in done]
                    rows.append(
                        {
                            "client": kind,
                            "partitions": partitions,
                            "members": members,
                            "median": statistics.median(rates),
                            "min": min(rates),
                            "max": max(rates),
                            "runs": done,
                        }
                    )
        if args.latency_members:
            await latency_rows(kinds, bootstrap, args, rows)
    finally:
        if cluster is not None:
            await anyio.to_thread.run_sync(cluster.down)
    say("")
    say(f"{'partitions':>10} {'members':>7}  {'client':<26} {'records/s median (min-max)':>30}")
    for row in rows:
        if "median" in row:
            spread = f"{row['median']:,.0f} ({row['min']:,.0f}-{row['max']:,.0f})"
            say(f"{row['partitions']:>10} {row['members']:>7}  {LABELS[row['client']]:<26} {spread:>30}")
    say("")
    say(f"{'partitions':>10} {'members':>7}  {'client':<26} {'p50 / p99 / max ms from the scheduled time'}")
    for row in rows:
        if "p99_ms" in row:
            cells = " / ".join(
                f"{row[k]['median']:,.0f} ({row[k]['min']:,.0f}-{row[k]['max']:,.0f})"
                for k in ("p50_ms", "p99_ms", "max_ms")
            )
            say(f"{row['partitions']:>10} {row['members']:>7}  {LABELS[row['client']]:<26} {cells}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = Path(args.output) if args.output else RESULTS / "share_groups.json"
    versions = peer_versions() if "confluent" in kinds else {}
    settings = {k: v for k, v in vars(args).items() if k != "classpath"}
    report = {"date": time.strftime("%Y-%m-%d"), "args": settings, "versions": versions, "rows": rows}
    out.write_text(json.dumps(report, indent=1))
    say(f"wrote {out}")
    say(
        plot(
            rows,
            kinds,
            out.with_suffix(".png") if args.output else ROOT / "docs" / "img" / "share_groups.png",
        )
    )
    return 0


async def latency_rows(
    kinds: list[str], bootstrap: str, args: argparse.Namespace, rows: list[dict[str, Any]]
) -> None:
    """One row per client and partition count: delivery latency at a fixed rate."""
    for partitions in (int(p) for p in args.partitions.split(",")):
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
        for i in range(args.runs):
            for kind in kinds[i % len(kinds) :] + kinds[: i % len(kinds)]:
                topic = f"share-lat-{partitions}p-{uuid.uuid4().hex[:6]}"
                async with AdminClient(bootstrap_servers=bootstrap) as admin:
                    await admin.create_topics([NewTopic(topic, partitions, 1)])
                run = await one_run(
                    kind, args.latency_members, partitions, bootstrap, topic, args, latency=True
                )
                runs[kind].append(run)
                say(
                    f"  latency {partitions:>2}p {args.latency_members}m {LABELS[kind]:<26} run {i + 1}: "
                    f"p50 {run['p50_ms']:,.0f} p99 {run['p99_ms']:,.0f} max {run['max_ms']:,.0f} ms "
                    f"({run['records']:,} of {run['produced']:,} records)"
                )
        for kind, done in runs.items():
            row: dict[str, Any] = {
                "client": kind, "partitions": partitions, "members": args.latency_members, "runs": done
            }  # fmt: skip
            for key in ("p50_ms", "p99_ms", "max_ms"):
                values = [r[key] for r in done]
                row[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
            rows.append(row)


COLORS = {"ours": "#1f77b4", "java": "#d62728", "confluent": "#2ca02c"}


def plot(rows: list[dict[str, Any]], kinds: list[str], path: Path) -> str:
    """Records/s per (partitions, members) and, when measured, p99 latency per partition count."""
    if not can_plot():
        return NO_PLOT
    rate_rows = [r for r in rows if "median" in r]
    groups = sorted({(r["partitions"], r["members"]) for r in rate_rows})
    cells = {
        k: [
            next(r for r in rate_rows if r["client"] == k and (r["partitions"], r["members"]) == g)
            for g in groups
        ]
        for k in kinds
    }
    panels: list[Any] = [("records/s (thousands)", [f"{p}p {m}m" for p, m in groups], cells, 1000.0, "%.0f")]
    lat_rows = [r for r in rows if "p99_ms" in r]
    if lat_rows:
        parts = sorted({r["partitions"] for r in lat_rows})
        lat = {
            k: [
                next(r for r in lat_rows if r["client"] == k and r["partitions"] == p)["p99_ms"]
                for p in parts
            ]
            for k in kinds
        }
        panels.append(
            (f"p99 latency ms ({lat_rows[0]['members']} members)", [f"{p}p" for p in parts], lat, 1.0, "%.0f")
        )
    save_bars(
        path, "share groups: aiokafka_lead vs Java KafkaShareConsumer vs confluent-kafka (preview)", panels,
        colors=COLORS, labels=LABELS, figsize=(6 + 4 * len(panels), 5),
    )  # fmt: skip
    return f"plot: {path}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap-server", help="an existing cluster (default: start a local 1-node one)")
    p.add_argument("--clients", default="ours,java,confluent")
    p.add_argument("--partitions", default="1,12")
    p.add_argument("--members", default="1,4,8")
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--idle-ms", type=int, default=2000, help="a member stops after this long without records")
    p.add_argument("--max-ms", type=int, default=120_000)
    p.add_argument("--latency-members", type=int, default=4, help="members in the latency runs (0: none)")
    p.add_argument("--latency-rate", type=float, default=1000.0, help="records/s in the latency runs")
    p.add_argument("--latency-seconds", type=float, default=15.0, help="production time of a latency run")
    p.add_argument("--output", help="result file (default benchmarks/results/share_groups.json)")
    args = p.parse_args()
    return anyio.run(main_async, args)


if __name__ == "__main__":
    sys.exit(main())
