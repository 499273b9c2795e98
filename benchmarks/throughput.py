"""The throughput benchmark: aiokafka_lead (with and without its C extension) against
aiokafka, confluent-kafka (sync and ``confluent_kafka.aio``) and the Java client.

Per client and run, on a fresh topic of the cluster (``--brokers`` local nodes, default 1, or
``--bootstrap-server``): one process produces ``--records`` records of ``--size`` bytes (no
key, ``--acks`` 1, or all with idempotence; linger 5 ms; ``--compression``;
``--replication``, ``--min-insync``), then another process consumes all of them from the
earliest offset (assign mode, no group). Each side reports records/s, CPU per record and its
own peak RSS. Each client is used the way its documentation recommends for throughput
(``await send()`` in a loop then ``flush()``; confluent ``produce()`` + ``poll(0)`` +
``flush()``; ``await AIOProducer.produce()``; Java ``send()`` with a callback then
``flush()``; ``getmany()`` / ``consume(num_messages=...)`` / ``poll()``). Every client sends
the same value bytes: random (incompressible) without ``--compression``, text-like
(compressible, seeded) with it. The client order rotates between runs, so a noisy neighbour
does not always hit the same one.

    python benchmarks/throughput.py                       # starts a local 1-node cluster
    python benchmarks/throughput.py --runs 5 --records 1000000
    python benchmarks/throughput.py --bootstrap-server H:P --clients ours,aiokafka
    python benchmarks/throughput.py --baseline /tmp/old --clients ours,ours-base,confluent

The clients ``ours-otel`` and ``ours-otel-api`` are aiokafka_lead traced by its OpenTelemetry
instrumentation (``aiokafka_lead.instrumentation.opentelemetry``, the ``otel`` extra): a span
per record sent and read, and the messaging metrics. ``ours-otel`` records them with the SDK
(spans through a batch processor to an exporter that drops them, metrics aggregated by an
in-memory reader); ``ours-otel-api`` leaves the API's no-op providers in place (the
instrumentation's own work only). Against ``ours`` in the same run they give the cost of
tracing per record; ``aiokafka-otel`` is aiokafka traced by opentelemetry-instrumentation-aiokafka
with the same SDK set-up, for comparison:

    python benchmarks/throughput.py --size 1024 --clients ours,ours-otel,ours-otel-api
    python benchmarks/throughput.py --size 1024 --clients ours,ours-otel,aiokafka,aiokafka-otel

``--baseline DIR`` adds the client ``ours-base``: aiokafka_lead imported from DIR, another
checkout with its C extension built in place (``python setup.py build_ext --inplace``), so a
change is measured against the code before it in the same interleaved run.

Writes benchmarks/results/throughput.json, the bar chart docs/img/throughput.png and the
docs section benchmarks/results/throughput.md (``--name`` other than "throughput" renames them).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.bench import children as bench
from aiokafka_lead.bench import java
from aiokafka_lead.bench.plot import NO_PLOT, can_plot

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PLOT = ROOT / "docs" / "img" / "throughput.png"
CLIENT = ROOT / "benchmarks" / "throughput_client.py"
JAVA_CLIENT = ROOT / "benchmarks" / "java" / "ThroughputClient.java"
LABELS = {
    **bench.PEER_LABELS,
    "ours-py": "aiokafka_lead (no C)",
    "ours-base": "aiokafka_lead (baseline)",
    "ours-otel": "aiokafka_lead (OTel SDK)",
    "ours-otel-api": "aiokafka_lead (OTel no-op)",
    "aiokafka-otel": "aiokafka (OTel SDK)",
    "confluent-aio": "confluent_kafka.aio",
    "java": "Java client",
}
#: client kinds that run another kind's code with extra environment variables
VARIANTS = {
    "ours-py": ("ours", {"AIOKAFKA_LEAD_NO_EXTENSIONS": "1"}),
    "ours-otel": ("ours", {"AIOKAFKA_LEAD_BENCH_OTEL": "sdk"}),
    "ours-otel-api": ("ours", {"AIOKAFKA_LEAD_BENCH_OTEL": "api"}),
    "aiokafka-otel": ("aiokafka", {"AIOKAFKA_LEAD_BENCH_OTEL": "sdk"}),
}
SIDES = ("produce", "consume")
COLORS = {
    "ours": "#1f77b4",
    "ours-py": "#9ecae1",
    "ours-base": "#6b6ecf",
    "ours-otel": "#17becf",
    "ours-otel-api": "#9edae5",
    "aiokafka-otel": "#ffbb78",
    "aiokafka": "#ff7f0e",
    "confluent": "#2ca02c",
    "confluent-aio": "#98df8a",
    "java": "#d62728",
}
#: distinct values the producers cycle through
VALUES = 64
METRICS = ("records_per_s", "cpu_us_per_record", "peak_rss_mib")


async def run_side(
    kind: str, side: str, bootstrap: str, topic: str, args: argparse.Namespace
) -> dict[str, Any]:
    """Run one client process, relaying its progress on one line; its RESULT as a dict."""
    client, extra_env = VARIANTS.get(kind, (kind, {}))
    if kind == bench.BASELINE_CLIENT:
        client, extra_env = "ours", bench.baseline_env(args.baseline)
    if kind == "java":
        cmd = java.command(args.java_classpath, "--side", side, main_class="ThroughputClient")
    else:
        cmd = [sys.executable, str(CLIENT), "--client", client, "--side", side]
    cmd += ["--bootstrap-server", bootstrap, "--topic", topic, "--partitions", str(args.partitions)]
    cmd += ["--records", str(args.records), "--size", str(args.size), "--acks", args.acks]
    cmd += ["--payload-file", str(args.payload_file), "--compression", args.compression]

    def line(done: int, started: float) -> str:
        rate = done / max(anyio.current_time() - started, 1e-9)
        return (
            f"    {LABELS[kind]:<16} {side:<8} {done:>9,}/{args.records:,} "
            f"({done * 100 // args.records:>3}%, ~{rate:,.0f}/s incl. start-up)"
        )

    return await bench.run_with_progress(cmd, line, limit_s=args.timeout, env=extra_env)


async def run_client(
    kind: str, admin: AdminClient, bootstrap: str, args: argparse.Namespace
) -> dict[str, dict[str, Any]]:
    configs = {"min.insync.replicas": str(args.min_insync)} if args.min_insync else {}
    async with bench.fresh_topic(admin, f"tp-{kind}", args.partitions, args.replication, configs) as topic:
        out = {}
        for side in SIDES:
            out[side] = r = await run_side(kind, side, bootstrap, topic, args)
            bench.say(
                f"    {LABELS[kind]:<16} {side:<8} {r['records_per_s']:>10,.0f} records/s "
                f"({r['seconds']:.2f}s), peak RSS {r['peak_rss_mib']:.0f} MiB"
            )
        return out


def aggregate(runs: list[dict[str, dict[str, dict[str, Any]]]], kinds: list[str]) -> dict[str, Any]:
    """Per client and side: median, min and max of each metric over the runs."""
    rows: dict[str, Any] = {}
    for kind in kinds:
        rows[kind] = {}
        for side in SIDES:
            rows[kind][side] = {m: bench.spread_of([run[kind][side][m] for run in runs]) for m in METRICS}
            if "aiokafka" in kinds:  # ratios within each run: robust to a machine busy in one run
                ratio = [
                    run[kind][side]["records_per_s"] / run["aiokafka"][side]["records_per_s"] for run in runs
                ]
                rows[kind][side]["ratio"] = bench.spread_of(ratio)
    return rows


def _acks(args: argparse.Namespace) -> str:
    rf = f", RF{args.replication}" + (f" min.insync {args.min_insync}" if args.min_insync else "")
    codec = f", {args.compression}" if args.compression != "none" else ""
    return ("acks=1" if args.acks == "1" else "acks=all, idempotent") + rf + codec


def payload(size: int, compressible: bool) -> bytes:
    """The values every client cycles through (``VALUES`` of ``size`` bytes, end to end):
    random bytes, or seeded text-like ones a codec can shrink (words drawn from one small
    vocabulary, as log lines and JSON events are), each value different."""
    if not compressible:
        return os.urandom(size * VALUES)
    rng = random.Random(size)
    words = [bytes(rng.choices(string.ascii_lowercase.encode(), k=rng.randint(3, 9))) for _ in range(400)]
    out = bytearray()
    while len(out) < size * VALUES:
        out += rng.choice(words) + (b'", "' if rng.random() < 0.2 else b" ")
    return bytes(out[: size * VALUES])


def spread(d: dict[str, float]) -> float:
    """The min-max spread as a percentage of the median."""
    return (d["max"] - d["min"]) / d["median"] * 100 if d["median"] else 0.0


def markdown(rows: dict[str, Any], args: argparse.Namespace, env: dict[str, Any]) -> str:
    base = rows.get("aiokafka")
    lines = [
        "| client | side | records/s: median (min-max) | spread | vs aiokafka: per-run ratio (min-max) "
        "| CPU µs/record | peak RSS MiB: median (min-max) |",
        "|---|---|---|---|---|---|---|",
    ]
    for side in SIDES:
        for kind, row in rows.items():
            rate, cpu, rss = (row[side][m] for m in METRICS)
            ratio = bench.ratio_text(row[side].get("ratio") if base else None)
            lines.append(
                f"| {LABELS[kind]} | {'producer' if side == 'produce' else 'consumer'} | "
                f"{rate['median']:,.0f} ({rate['min']:,.0f}-{rate['max']:,.0f}) | {spread(rate):.0f}% | "
                f"{ratio} | {cpu['median']:.2f} | {rss['median']:.0f} ({rss['min']:.0f}-{rss['max']:.0f}) |"
            )
    intro = (
        f"### Throughput\n\n"
        f"`python benchmarks/throughput.py` ({args.runs} runs, client order rotating, after "
        f"{args.warmup} unmeasured warm-up production and read): per client and run, "
        f"on a fresh {args.partitions}-partition topic of a {args.brokers}-node cluster, "
        f"one process produces "
        f"{args.records:,} records of {args.size} B "
        f"({'text-like' if args.compression != 'none' else 'random'} values, "
        f"no key, {_acks(args)}, linger 5 ms, each client's other "
        f"defaults), then a second process consumes them all from the earliest offset (assign mode, "
        f"no group, the value of every record read). The rate is records over the wall time from the "
        f"first send to the end of `flush()` (producer) and from the first poll to the last record "
        f"(consumer); start-up and connection are not timed. Peak RSS is the process's `ru_maxrss` "
        f"(interpreter and imports included). CPU µs/record: the process's CPU time (all threads, "
        f"so librdkafka's too) over the timed part, per record (median): less sensitive to a busy "
        f"machine than the rate. Spread: (max - min) / median.\n\n"
        f"Versions: aiokafka {env.get('aiokafka')}, confluent-kafka {env.get('confluent')} "
        f"(librdkafka {env.get('librdkafka')}), Python {env.get('python')}, Kafka {env.get('kafka')}, "
        f"brokers: {env.get('brokers')}. "
        f"Machine: {env.get('machine')} (numbers from different runs are not comparable, "
        f"ratios within a run are).\n\n![throughput](img/{args.name}.png)\n"
    )
    notes = (
        "\nReading the table:\n\n"
        "- aiokafka_lead decodes record batches, builds `ConsumerRecord`s and encodes the "
        "producer's records in a small optional C extension (`aiokafka_lead/_speedups.c`, "
        '`_speedups_producer.c`); the rest is Python. "no C" is the same client with '
        "`AIOKAFKA_LEAD_NO_EXTENSIONS=1` (what a machine without a C compiler gets). aiokafka "
        "parses record batches with a C extension too; confluent-kafka is librdkafka (C, its own "
        "threads).\n"
        "- The producer's peak RSS includes up to `buffer_memory` (32 MiB, Java's default) of "
        "records queued ahead of the broker; aiokafka blocks `send()` once a partition has a full "
        "batch waiting, so it holds less.\n"
        "- confluent-kafka's consumer rate is bounded by the Python side of `consume()` "
        "(one `Message` object and two method calls per record). `confluent_kafka.aio` runs "
        "the same calls in a thread pool; its producer batches `produce()` calls in Python "
        "before handing them to librdkafka.\n"
        "- The Java client is kafka-clients of the cluster's Kafka version "
        "(benchmarks/java/ThroughputClient.java), default JVM flags but `-Xmx512m`; its "
        "start-up and JIT warm-up before the first send are not timed, the JIT's work during "
        "the run is (in its CPU time).\n"
    )
    return intro + "\n" + "\n".join(lines) + "\n" + notes


def plot(rows: dict[str, Any], path: Path, title: str) -> Path:
    """Bars: producer and consumer records/s, CPU per record and peak RSS; whiskers span min-max."""
    metrics = (
        ("records_per_s", "records/s (thousands)", 1000.0, "%.0f"),
        ("cpu_us_per_record", "CPU µs per record", 1.0, "%.1f"),
        ("peak_rss_mib", "peak RSS MiB", 1.0, "%.0f"),
    )
    panels = [
        (ylabel, ["producer", "consumer"], {k: [rows[k][s][metric] for s in SIDES] for k in rows}, scale, fmt)
        for metric, ylabel, scale, fmt in metrics
    ]
    return bench.save_bars(path, title, panels, colors=COLORS, labels=LABELS, figsize=(14, 4.4))


def render(args: argparse.Namespace) -> int:
    """Rebuild the table and the plot from benchmarks/results/throughput.json (no measuring)."""
    saved = json.loads((RESULTS / f"{args.name}.json").read_text())
    for key in ("records", "size", "partitions", "runs"):
        setattr(args, key, saved["config"][key])
    defaults: tuple[tuple[str, Any], ...] = (("brokers", 1), ("acks", "1"), ("replication", 1))
    defaults += (("min_insync", 0), ("compression", "none"), ("warmup", 0))
    for key, default in defaults:
        setattr(args, key, saved["config"].get(key, default))
    kinds = saved["config"]["clients"].split(",")
    rows = aggregate(saved["runs"], kinds)
    saved["rows"] = rows
    (RESULTS / f"{args.name}.json").write_text(json.dumps(saved, indent=1))
    finish(rows, args, saved["env"])
    return 0


def finish(rows: dict[str, Any], args: argparse.Namespace, env: dict[str, Any]) -> None:
    text = markdown(rows, args, env)
    bench.say("\n" + text)
    (RESULTS / f"{args.name}.md").write_text(text)
    title = (
        f"{args.records:,} records of {args.size} B, {_acks(args)}, linger 5 ms: "
        f"median of {args.runs} runs (whiskers: min-max)"
    )
    image = PLOT.with_name(args.name + ".png")
    bench.say(f"plot: {plot(rows, image, title)}" if can_plot() else NO_PLOT)


async def main(args: argparse.Namespace) -> int:
    kinds = bench.client_kinds(args, LABELS)
    RESULTS.mkdir(parents=True, exist_ok=True)
    bench.compile_bytecode(ROOT, args.baseline)
    if "java" in kinds:
        bench.say("compiling the Java client...")
        args.java_classpath = await anyio.to_thread.run_sync(
            lambda: java.compile_class(
                JAVA_CLIENT,
                "ThroughputClient",
                args.kafka_version,
                prefix="java-throughput",
                what="the Java client",
            )
        )
    runs: list[dict[str, dict[str, dict[str, Any]]]] = []
    async with (
        bench.comparison_cluster(args, "throughput-") as bootstrap,
        AdminClient(bootstrap_servers=bootstrap) as admin,
    ):
        with tempfile.NamedTemporaryFile(prefix="throughput-payload-", delete=False) as f:
            f.write(payload(args.size, compressible=args.compression != "none"))
            args.payload_file = Path(f.name)
        for warmup in range(args.warmup):
            bench.say(f"warm-up {warmup + 1}/{args.warmup} (unmeasured: the brokers' JIT, page cache)")
            await run_client("ours", admin, bootstrap, args)
        for run in range(args.runs):
            order = bench.client_order(kinds, run)
            bench.say(f"run {run + 1}/{args.runs}: {', '.join(LABELS[k] for k in order)}")
            runs.append({kind: await run_client(kind, admin, bootstrap, args) for kind in order})
        args.payload_file.unlink()
    rows = aggregate(runs, kinds)
    env = bench.run_env(
        args,
        brokers=f"{args.brokers} local node(s), benchmark JVM settings, Kafka's default broker settings"
        if args.bootstrap_server is None
        else "external",
    )
    keys: tuple[str, ...] = ("records", "size", "partitions", "runs", "clients", "brokers")
    keys += ("acks", "replication", "min_insync", "compression", "warmup")
    config = {k: getattr(args, k) for k in keys}
    config |= {"linger_ms": 5}
    (RESULTS / f"{args.name}.json").write_text(
        json.dumps({"config": config, "env": env, "rows": rows, "runs": runs}, indent=1)
    )
    finish(rows, args, env)
    return 0


if __name__ == "__main__":
    parser = bench.comparison_parser(__doc__, clients="ours,ours-py,aiokafka,confluent,confluent-aio,java")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=1, help="nodes of the local cluster it starts")
    parser.add_argument("--name", default="throughput", help="results/<name>.json|md, docs/img/<name>.png")
    parser.add_argument("--acks", choices=["1", "all"], default="1", help="all: with idempotence")
    parser.add_argument("--replication", type=int, default=1, help="the topics' replication factor")
    parser.add_argument("--min-insync", type=int, default=0, help="topics' min.insync.replicas (0: broker's)")
    parser.add_argument("--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"], default="none")
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="unmeasured productions and reads (aiokafka_lead's) before the runs: the first run "
        "on fresh brokers is otherwise the slowest, whichever client it is",
    )
    bench.add_baseline_option(parser)
    parser.add_argument("--render", action="store_true", help="only redo table and plot from the JSON")
    parsed = parser.parse_args()
    sys.exit(render(parsed) if parsed.render else anyio.run(main, parsed))
