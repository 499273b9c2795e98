"""The "aiokafka_lead" Spark data source against the real 3-node cluster.

One SparkSession (local[2]) for the module. The data source is NOT registered explicitly:
Spark finds it through the ``pyspark_aiokafka_lead`` module (auto-discovery).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.testing.leaders import rotate_leadership
from aiokafka_lead.testing.oidc import running_oidc_server
from tests.integration.conftest import unique

pytestmark = pytest.mark.integration
pyspark = pytest.importorskip("pyspark", reason="install aiokafka_lead[spark]")


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable  # executors must use this venv's interpreter
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("aiokafka_lead-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def make_topic(bootstrap: str, partitions: int) -> str:
    name = unique("spark")

    async def create() -> None:
        async with AdminClient(bootstrap_servers=bootstrap) as admin:
            await admin.create_topics([NewTopic(name, partitions, 3)])

    anyio.run(create)
    return name


def produce(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes]]) -> None:
    async def send() -> None:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
            for partition, key, value in records:
                await producer.send(topic, value, key=key, partition=partition)

    anyio.run(send)


def reader(spark: Any, bootstrap: str, **options: str) -> Any:
    r = spark.read.format("aiokafka_lead").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_batch_read_of_an_exact_offset_range(spark: Any, kafka_cluster: Any) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic = make_topic(bootstrap, 2)
    produce(bootstrap, topic, [(0, f"k{i}".encode(), f"v{i}".encode()) for i in range(100)])
    produce(bootstrap, topic, [(1, None, f"w{i}".encode()) for i in range(50)])
    df = reader(
        spark,
        bootstrap,
        subscribe=topic,
        startingOffsets=json.dumps({topic: {"0": 10, "1": -2}}),
        endingOffsets=json.dumps({topic: {"0": 20, "1": -1}}),
    )
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    rows = sorted((r.partition, r.offset, r.key, bytes(r.value)) for r in df.collect())
    expected = [(0, o, f"k{o}".encode(), f"v{o}".encode()) for o in range(10, 20)]
    expected += [(1, o, None, f"w{o}".encode()) for o in range(50)]
    assert [(p, o, bytes(k) if k is not None else None, v) for p, o, k, v in rows] == expected
    assert df.filter("timestampType = 0").count() == 60  # create time


def test_streaming_available_now_restarts_from_its_checkpoint(
    spark: Any, kafka_cluster: Any, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic = make_topic(bootstrap, 3)
    produce(bootstrap, topic, [(i % 3, None, f"a{i}".encode()) for i in range(30)])

    def run_once() -> Any:
        stream = (
            spark.readStream.format("aiokafka_lead")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "7")
            .load()
            .selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
        )
        query = (
            stream.writeStream.format("parquet")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .option("path", str(tmp_path / "out"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(timeout=300)
        return query

    first = run_once()
    assert len(first.recentProgress) >= 5  # 30 records, at most 7 per micro-batch
    produce(bootstrap, topic, [(i % 3, None, f"b{i}".encode()) for i in range(20)])
    run_once()
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    values = sorted(r.value for r in rows)
    assert values == sorted([f"a{i}" for i in range(30)] + [f"b{i}" for i in range(20)])  # exactly once
    assert len({(r.partition, r.offset) for r in rows}) == 50


def test_write_then_read_round_trip_with_headers_and_null_keys(spark: Any, kafka_cluster: Any) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic = make_topic(bootstrap, 1)
    schema = "key binary, value binary, headers array<struct<key: string, value: binary>>"
    data = [
        (b"k1", b"v1", [("h1", b"x"), ("h2", None)]),
        (None, b"v2", []),
        (b"k3", b"", [("h3", b"z")]),
    ]
    spark.createDataFrame(data, schema).coalesce(1).write.format("aiokafka_lead").option(
        "kafka.bootstrap.servers", bootstrap
    ).option("topic", topic).mode("append").save()
    df = reader(spark, bootstrap, subscribe=topic, includeHeaders="true")
    rows = sorted(df.collect(), key=lambda r: r.offset)
    got = [
        (
            bytes(r.key) if r.key is not None else None,
            bytes(r.value),
            [(h.key, bytes(h.value) if h.value is not None else None) for h in r.headers],
        )
        for r in rows
    ]
    assert got == data


def test_leader_moves_during_a_streaming_read_lose_and_duplicate_nothing(
    spark: Any, kafka_cluster: Any, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic = make_topic(bootstrap, 3)
    produce(bootstrap, topic, [(i % 3, None, f"m{i}".encode()) for i in range(600)])
    moves_done = threading.Event()
    errors: list[BaseException] = []

    def move_leaders() -> None:
        async def rotate() -> None:
            async with AdminClient(bootstrap_servers=bootstrap) as admin:
                for _ in range(3):
                    with anyio.fail_after(60):
                        await rotate_leadership(admin, [topic])

        try:
            anyio.run(rotate)
        except BaseException as exc:
            errors.append(exc)
        finally:
            moves_done.set()

    mover = threading.Thread(target=move_leaders)
    stream = (
        spark.readStream.format("aiokafka_lead")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40")
        .load()
        .selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
    )
    query = (
        stream.writeStream.format("parquet")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .option("path", str(tmp_path / "out"))
        .trigger(availableNow=True)
        .start()
    )
    mover.start()
    assert query.awaitTermination(timeout=600)
    mover.join(timeout=120)
    assert moves_done.is_set() and not errors
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(r.value for r in rows) == sorted(f"m{i}" for i in range(600))
    assert len({(r.partition, r.offset) for r in rows}) == 600


def test_example_pipeline_runs_end_to_end(kafka_cluster: Any, tmp_path: Path) -> None:
    """examples/spark_pipeline.py: service -> streaming aggregation -> topic + parquet; totals match."""
    import subprocess

    example = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"
    cmd = [sys.executable, str(example), "--bootstrap-server", kafka_cluster.bootstrap()]
    cmd += ["--out", str(tmp_path / "out"), "--orders", "2000"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "orders aggregated: 2000 of 2000" in done.stdout and "totals match" in done.stdout
    assert list((tmp_path / "out" / "totals").glob("*.parquet"))


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("overwrite", r'cannot honour save mode "overwrite".*Use \.mode\("append"\)'),
        ("errorifexists", "ErrorIfExists"),  # Spark's own refusal, before the source runs
        ("ignore", "Ignore"),
    ],
)
def test_a_save_mode_other_than_append_is_refused_clearly(spark: Any, mode: str, message: str) -> None:
    """Nothing is written: the refusal comes before any connection (none is reachable here)."""
    df = spark.createDataFrame([(b"k", b"v")], "key binary, value binary")
    writer = df.write.format("aiokafka_lead").option("kafka.bootstrap.servers", "127.0.0.1:1")
    with pytest.raises(Exception, match=message):
        writer.option("topic", "never-written").mode(mode).save()


@pytest.mark.security_listeners
def test_batch_read_over_oauthbearer_with_java_oidc_options(spark: Any, kafka_cluster: Any) -> None:
    """kafka.* OIDC client-credentials options: every executor gets its token from the
    endpoint and reads over the SASL listener (the cluster's unsecured validator)."""
    bootstrap = kafka_cluster.bootstrap()
    topic = make_topic(bootstrap, 1)
    produce(bootstrap, topic, [(0, None, f"o{i}".encode()) for i in range(20)])
    with running_oidc_server(clients={"spark": "spark-secret"}, unsigned=True) as oidc:
        df = reader(
            spark,
            kafka_cluster.bootstrap("SASL_PLAINTEXT"),
            subscribe=topic,
            **{
                "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": "OAUTHBEARER",
                "kafka.sasl.oauthbearer.token.endpoint.url": oidc.token_url,
                "kafka.sasl.oauthbearer.client.credentials.client.id": "spark",
                "kafka.sasl.oauthbearer.client.credentials.client.secret": "spark-secret",
            },
        )
        values = sorted(bytes(r.value).decode() for r in df.select("value").collect())
        assert oidc.issued >= 1
    assert values == sorted(f"o{i}" for i in range(20))
