"""Spark: the "aiokafka_lead" data source against Spark's own Kafka connector (the JVM
spark-sql-kafka-0-10, ``format("kafka")``), in one SparkSession, on the same topics.

For each workload (``--workloads``, records x bytes per value), one input topic is filled
once; then each round runs both sources, in alternating order (ours first in odd rounds):

- read: ``count(*)`` and ``sum(length(substring(value, 2, 50)))`` over the whole topic, so
  every value is materialised; both must return every record and the same checksum;
- write: ``spark.range(n)`` as key (the number as a string) and value (``n`` bytes) into a
  fresh topic of ``--partitions`` partitions and ``--replication`` replicas (both
  producers at their default, acks=all); the topic's end offsets must add up to n.

Prints records/s per round and side, then per workload and direction the median, min-max and
spread of each side and the median of the per-round ratios (ours / JVM). The first round
includes the SparkSession's warm-up. The connector's jars come from Maven Central once
(``aiokafka_lead.testing.spark_connector``).

    python benchmarks/spark.py                                  # local[2], local 3-node cluster
    python benchmarks/spark.py --rounds 5 --workloads 1000000x100,200000x1024
    python benchmarks/spark.py --standalone                     # a Spark standalone master + worker
    python benchmarks/spark.py --master spark://host:7077 --bootstrap-server H:P
    python benchmarks/spark.py --rounds 1 --workloads 2000x100 --brokers 1 --replication 1  # smoke

Writes benchmarks/results/spark.json and, with matplotlib, docs/img/spark.png
(``spark_standalone.json`` / ``.png`` with ``--standalone``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

# this checkout's package, for the driver and (through PYTHONPATH, session()) Spark's workers
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.admin.types import OffsetSpec
from aiokafka_lead.bench import children as bench
from aiokafka_lead.bench.plot import NO_PLOT, can_plot
from aiokafka_lead.structs import TopicPartition

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "spark.json"
PLOT = ROOT / "docs" / "img" / "spark.png"
SIDES = {"ours": "aiokafka_lead", "jvm": "Spark's connector"}
FORMATS = {"ours": "aiokafka_lead", "jvm": "kafka"}
COLORS = {"ours": "tab:blue", "jvm": "tab:orange"}
SUBSTRING = 50  # characters of each value the read sums over (from the second)


def workloads(text: str) -> list[tuple[int, int]]:
    """``1000000x100,200000x1024`` -> [(1000000, 100), (200000, 1024)]."""
    out = []
    for item in text.split(","):
        records, _, size = item.partition("x")
        out.append((int(records), int(size)))
    return out


# ---------------------------------------------------------------------------- Kafka side


async def create_topic(bootstrap: str, prefix: str, partitions: int, replication: int) -> str:
    topic = f"{prefix}-{os.urandom(4).hex()}"
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, partitions, replication)])
    return topic


async def fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    """The input topic: ``records`` values of ``size`` bytes, keys the record number."""
    value = b"v" * size
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20) as producer:
        for i in range(records):
            await producer.send(topic, value, key=str(i).encode())
            if i % 100_000 == 0:
                bench.say(f"  filling {topic}: {i:,}/{records:,}")
        await producer.flush()


async def end_offsets_total(bootstrap: str, topic: str, partitions: int) -> int:
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        specs = {TopicPartition(topic, p): OffsetSpec.LATEST for p in range(partitions)}
        found = await admin.list_offsets(specs)
    return sum(info.offset for info in found.values())


# ---------------------------------------------------------------------------- Spark side


@contextlib.contextmanager
def standalone_cluster(cores: int) -> Iterator[str]:
    """A Spark standalone master and one worker of ``cores`` cores, from the installed PySpark."""
    import pyspark

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    master_url = f"spark://127.0.0.1:{port}"
    logs = Path(tempfile.mkdtemp(prefix="spark-standalone-"))
    procs = []
    try:
        bench.say(f"starting a Spark standalone master at {master_url}, a {cores}-core worker (logs: {logs})")
        cmd = [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        procs.append(_spawn([*cmd, "--port", str(port), "--webui-port", "0"], env, logs / "master.log"))
        _wait_port(port, 60)
        worker = [str(spark_class), "org.apache.spark.deploy.worker.Worker", "--cores", str(cores)]
        procs.append(_spawn([*worker, "--webui-port", "0", master_url], env, logs / "worker.log"))
        yield master_url
    finally:
        for proc in reversed(procs):
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
        shutil.rmtree(logs, ignore_errors=True)


def _spawn(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)


def _wait_port(port: int, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the Spark master did not listen on port {port} within {limit_s:.0f} s")


def session(master: str) -> Any:
    from pyspark.sql import SparkSession

    from aiokafka_lead.testing.spark_connector import spark_jars_option

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    bench.say(f"starting a SparkSession on {master} with Spark's Kafka connector loaded ...")
    spark = (
        SparkSession.builder.master(master)
        .appName("aiokafka_lead-benchmark")
        .config("spark.jars", spark_jars_option())
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.executorEnv.PYTHONPATH", str(ROOT))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def read_once(spark: Any, side: str, bootstrap: str, topic: str) -> tuple[float, tuple[int, int]]:
    started = time.perf_counter()
    row = (
        spark.read.format(FORMATS[side])
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
        .selectExpr("count(*) AS n", f"sum(length(substring(value, 2, {SUBSTRING}))) AS checksum")
        .collect()[0]
    )
    return time.perf_counter() - started, (int(row.n), int(row.checksum or 0))


def write_once(spark: Any, side: str, bootstrap: str, topic: str, shape: tuple[int, int]) -> float:
    records, size = shape
    frame = spark.range(records).selectExpr("CAST(id AS STRING) AS key", f"repeat('w', {size}) AS value")
    started = time.perf_counter()
    (
        frame.write.format(FORMATS[side])
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    return time.perf_counter() - started


# ---------------------------------------------------------------------------- the run


def summary(rates: dict[str, list[float]]) -> dict[str, Any]:
    ratios = [o / j for o, j in zip(rates["ours"], rates["jvm"], strict=True)]
    out: dict[str, Any] = {side: bench.spread_of(values) for side, values in rates.items()}
    for side in rates:
        out[side]["spread_pct"] = 100 * (out[side]["max"] - out[side]["min"]) / out[side]["median"]
    out["ratio"] = bench.spread_of(ratios)
    return out


def run(args: argparse.Namespace, bootstrap: str, master: str) -> dict[str, Any]:
    spark = session(master)
    results: dict[str, Any] = {}
    try:
        for records, size in workloads(args.workloads):
            name = f"{records:,} x {size} B"
            topic = anyio.run(create_topic, bootstrap, "spark-in", args.partitions, args.replication)
            bench.say(f"{name}: filling the input topic {topic} ({args.partitions} partitions)")
            anyio.run(fill, bootstrap, topic, records, size)
            expected = (records, records * min(SUBSTRING, max(size - 1, 0)))
            rates: dict[str, dict[str, list[float]]] = {"read": {"ours": [], "jvm": []}}
            rates["write"] = {"ours": [], "jvm": []}
            for n in range(args.rounds):
                for side in ("ours", "jvm") if n % 2 == 0 else ("jvm", "ours"):
                    seconds, got = read_once(spark, side, bootstrap, topic)
                    if got != expected:
                        raise RuntimeError(f"{SIDES[side]} read {got} (count, checksum), expected {expected}")
                    rates["read"][side].append(records / seconds)
                    out = anyio.run(create_topic, bootstrap, "spark-out", args.partitions, args.replication)
                    seconds = write_once(spark, side, bootstrap, out, (records, size))
                    written = anyio.run(end_offsets_total, bootstrap, out, args.partitions)
                    if written != records:
                        raise RuntimeError(f"{SIDES[side]} wrote {written} records, expected {records}")
                    rates["write"][side].append(records / seconds)
                    bench.say(
                        f"{name} round {n + 1}/{args.rounds} {SIDES[side]:<18} read "
                        f"{rates['read'][side][-1]:>10,.0f}/s  write {rates['write'][side][-1]:>10,.0f}/s"
                    )
            results[name] = {d: {"rates": r, "summary": summary(r)} for d, r in rates.items()}
    finally:
        spark.stop()
    return results


def table(results: dict[str, Any]) -> str:
    lines = [
        "| workload | direction | aiokafka_lead: median (min-max), spread | Spark's connector "
        "| ratio: median (min-max) |",
        "|---|---|---|---|---|",
    ]
    for name, directions in results.items():
        for direction, data in directions.items():
            s = data["summary"]
            cells = [
                f"{s[k]['median']:,.0f}/s ({s[k]['min']:,.0f}-{s[k]['max']:,.0f}), {s[k]['spread_pct']:.0f}%"
                for k in ("ours", "jvm")
            ]
            ratio = bench.ratio_text(s["ratio"])
            lines.append(f"| {name} | {direction} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(lines)


def plot(results: dict[str, Any], title: str, path: Path = PLOT) -> Path:
    groups = [f"{name}\n{direction}" for name, ds in results.items() for direction in ds]
    cells = {
        side: [data["summary"][side] for ds in results.values() for data in ds.values()] for side in SIDES
    }
    panel = ("records/s (thousands)", groups, cells, 1000.0, "%.0f")
    size = (4 + 2 * len(groups), 5)
    return bench.save_bars(path, title, [panel], colors=COLORS, labels=SIDES, figsize=size)


def main(args: argparse.Namespace) -> int:
    import pyspark

    async def cluster_run() -> dict[str, Any]:
        async with bench.comparison_cluster(args, "spark-bench-") as bootstrap:
            local = contextlib.nullcontext(args.master)
            with standalone_cluster(args.cores) if args.standalone else local as master:
                return await anyio.to_thread.run_sync(run, args, bootstrap, master)

    # run() drives its own event loops (anyio.run) from the worker thread
    results = anyio.run(cluster_run)
    env = {
        "machine": args.machine,
        "master": "standalone (1 worker)" if args.standalone else args.master,
        "kafka": args.kafka_version if args.bootstrap_server is None else "external",
        "brokers": args.brokers,
        "replication": args.replication,
        "partitions": args.partitions,
        "pyspark": pyspark.__version__,
        "connector": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
        "python": sys.version.split()[0],
        "date": time.strftime("%Y-%m-%d"),
    }
    result, picture = (
        (RESULT.with_name("spark_standalone.json"), PLOT.with_name("spark_standalone.png"))
        if args.standalone
        else (RESULT, PLOT)
    )
    result.parent.mkdir(parents=True, exist_ok=True)
    result.write_text(json.dumps({"env": env, "results": results}, indent=1))
    bench.say("\n" + table(results))
    title = f"Spark {env['master']}, PySpark {env['pyspark']}: aiokafka_lead vs Spark's Kafka connector"
    bench.say(f"plot: {plot(results, title, picture)}" if can_plot() else NO_PLOT)
    bench.say(f"results: {result}")
    return 0


def parser() -> argparse.ArgumentParser:
    from aiokafka_lead.testing.cluster.jars import DEFAULT_KAFKA_VERSION

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-server", help="an existing cluster (default: a local one is started)")
    p.add_argument("--brokers", type=int, default=3, help="nodes of the local cluster")
    p.add_argument("--replication", type=int, default=3)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--workloads", default="1000000x100,200000x1024", help="records x value bytes, comma list")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--standalone", action="store_true", help="start a Spark standalone master and worker")
    p.add_argument("--cores", type=int, default=2, help="the standalone worker's cores")
    p.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION)
    p.add_argument("--machine", default="2 cores, 24 GiB, loopback")
    return p


if __name__ == "__main__":
    sys.exit(main(parser().parse_args()))
