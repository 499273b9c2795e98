"""The "aiokafka_lead" Spark data source against the real 3-node cluster.

One SparkSession (local[2]) for the module, with Spark's own Kafka connector loaded
(``spark.jars``: fetched from Maven Central once), so the differential tests compare both
sources' rows in the same session. The data source is NOT registered explicitly: Spark
finds it through the ``pyspark_aiokafka_lead`` module (auto-discovery).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.testing.leaders import rotate_leadership
from aiokafka_lead.testing.oidc import running_oidc_server
from aiokafka_lead.testing.spark_connector import spark_jars_option
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
        .config("spark.jars", spark_jars_option())
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
    # the progress shows the rows read and each partition's latest offset (how far behind)
    assert sum(progress.numInputRows for progress in first.recentProgress) == 30
    latest = json.loads(first.recentProgress[-1].sources[0].latestOffset)
    assert latest == {topic: {"0": 10, "1": 10, "2": 10}}
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
            [(h.key, bytes(h.value) if h.value is not None else None) for h in r.headers or []],
        )
        for r in rows
    ]
    assert got == data


def test_a_record_the_brokers_refuse_fails_the_task_naming_its_partition(
    spark: Any, kafka_cluster: Any
) -> None:
    """The topic takes messages of at most 1,000 bytes; the producer's own limit is higher,
    so the broker refuses the record and the write fails with the partition and the error."""
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("spark-small")

    async def create() -> None:
        async with AdminClient(bootstrap_servers=bootstrap) as admin:
            await admin.create_topics([NewTopic(topic, 1, 3, topic_configs={"max.message.bytes": "1000"})])

    anyio.run(create)
    rows = [(b"ok", b"small"), (b"big", b"x" * 5000)]
    writer = spark.createDataFrame(rows, "key binary, value binary").coalesce(1).write.format("aiokafka_lead")
    refused = rf"a record to {topic}-0 was not delivered: MessageTooLargeError"
    with pytest.raises(Exception, match=refused):
        writer.option("kafka.bootstrap.servers", bootstrap).option("topic", topic).mode("append").save()


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


# ------------------------------------------------------------ against Spark's JVM connector

#: the first record's timestamp; each next one 10 ms later. Recent: the brokers delete records
#: older than retention.ms (7 days) by their timestamps.
T0 = (int(time.time()) - 3600) * 1000
PER_PARTITION = 60


@pytest.fixture(scope="module")
def diff_topic(kafka_cluster: Any) -> tuple[str, str]:
    """3 partitions of 60 records each: keys and null keys, headers (with a null value),
    create-time timestamps T0 + 10 ms * i."""
    bootstrap = kafka_cluster.bootstrap()
    topic = make_topic(bootstrap, 3)

    async def send() -> None:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
            handles = []
            for i in range(3 * PER_PARTITION):
                key = None if i % 4 == 0 else f"k{i}".encode()
                headers = [("n", str(i).encode()), ("empty", None)] if i % 3 else []
                handles.append(
                    await producer.send(
                        topic, f"v{i}".encode() * (i % 7), key=key, partition=i % 3,
                        timestamp_ms=T0 + 10 * i, headers=headers,
                    )
                )  # fmt: skip
            for handle in handles:
                await handle

    anyio.run(send)
    return bootstrap, topic


def canonical(row: Any) -> tuple[Any, ...]:
    def raw(b: Any) -> bytes | None:
        return None if b is None else bytes(b)

    headers = getattr(row, "headers", None)
    return (
        raw(row.key), raw(row.value), row.topic, row.partition, row.offset, row.timestamp,
        row.timestampType, None if headers is None else [(h.key, raw(h.value)) for h in headers],
    )  # fmt: skip


def both(spark: Any, bootstrap: str, options: dict[str, str]) -> tuple[Any, Any]:
    """The same read through Spark's connector and through ours."""
    frames = []
    for fmt in ("kafka", "aiokafka_lead"):
        r = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
        for k, v in options.items():
            r = r.option(k, v)
        frames.append(r.load())
    return frames[0], frames[1]


def diff_cases(topic: str) -> dict[str, dict[str, str]]:
    ts = T0 + 10 * 90  # the middle of the topic: partition p has records from offset 30 on
    return {
        "everything with headers": {"subscribe": topic, "includeHeaders": "true"},
        "offset ranges": {
            "subscribe": topic,
            "startingOffsets": json.dumps({topic: {"0": 5, "1": -2, "2": 59}}),
            "endingOffsets": json.dumps({topic: {"0": 17, "1": 40, "2": -1}}),
        },
        "startingTimestamp to endingOffsetsByTimestamp": {
            "subscribe": topic,
            "startingTimestamp": str(ts),
            "endingOffsetsByTimestamp": json.dumps({topic: {"0": ts + 300, "1": ts + 301, "2": T0 + 10**9}}),
        },
        "startingOffsetsByTimestamp and endingTimestamp": {
            "assign": json.dumps({topic: [0, 2]}),
            "startingOffsetsByTimestamp": json.dumps({topic: {"0": T0, "2": ts + 5}}),
            "endingTimestamp": str(ts + 500),
            "includeHeaders": "true",
        },
        "a start after every record, strategy latest": {
            "subscribe": topic,
            "startingTimestamp": str(T0 + 10**9),
            "startingOffsetsByTimestampStrategy": "latest",
        },
        "split partitions (minPartitions)": {
            "subscribePattern": topic.replace("-", ".") + "$",
            "minPartitions": "7",
        },
        "split partitions (maxRecordsPerPartition)": {
            "subscribe": topic,
            "maxRecordsPerPartition": "13",
            "includeHeaders": "true",
        },
    }


CASE_NAMES = list(diff_cases("t"))


@pytest.mark.parametrize("case", CASE_NAMES)
def test_the_same_rows_as_sparks_jvm_connector(spark: Any, diff_topic: tuple[str, str], case: str) -> None:
    bootstrap, topic = diff_topic
    options = diff_cases(topic)[case]
    jvm, ours = both(spark, bootstrap, options)
    assert ours.schema == jvm.schema
    jvm_rows = sorted((canonical(r) for r in jvm.collect()), key=lambda row: row[2:5])
    our_rows = sorted((canonical(r) for r in ours.collect()), key=lambda row: row[2:5])
    assert our_rows == jvm_rows
    if case == "split partitions (minPartitions)":
        assert ours.rdd.getNumPartitions() == jvm.rdd.getNumPartitions() > 3
    if case == "split partitions (maxRecordsPerPartition)":
        # 60 offsets per partition in tasks of at most 13: five each, as Spark's documentation
        # says (its connector's batch relation reads each partition in one task regardless)
        assert ours.rdd.getNumPartitions() == 3 * 5
    if case != "a start after every record, strategy latest":
        assert jvm_rows  # each case reads something


@pytest.mark.parametrize(
    "options",
    [
        {"subscribe": "t", "minPartitions": "0"},
        {"subscribe": "t", "maxRecordsPerPartition": "0"},
        {"subscribe": "t", "startingOffsets": "latest"},
        {"subscribe": "t", "startingTimestamp": "noon"},
        {"assign": "[0]"},
        {},
    ],
    ids=lambda o: ",".join(o) or "no strategy",
)
def test_bad_options_fail_with_the_jvm_connectors_message(spark: Any, options: dict[str, str]) -> None:
    """Checked before any connection (the bootstrap address is not reachable)."""
    jvm, ours = [], []
    for fmt, messages in (("kafka", jvm), ("aiokafka_lead", ours)):
        r = spark.read.format(fmt).option("kafka.bootstrap.servers", "127.0.0.1:1")
        for k, v in options.items():
            r = r.option(k, v)
        with pytest.raises(Exception) as raised:
            r.load().collect()
        messages.append(str(raised.value))
    expected = jvm[0].split("IllegalArgumentException: ", 1)[-1].splitlines()[0].strip()
    assert expected and expected in ours[0]


def test_no_timestamp_match_fails_as_the_jvm_connector_does(spark: Any, diff_topic: tuple[str, str]) -> None:
    bootstrap, topic = diff_topic
    late = str(T0 + 10**9)
    messages = []
    for frame in both(spark, bootstrap, {"subscribe": topic, "startingTimestamp": late}):
        with pytest.raises(Exception) as raised:
            frame.collect()
        messages.append(str(raised.value))
    assert "No offset matched from request of topic-partition" in messages[0]
    assert f"No offset matched from request of topic-partition {topic}-0 and timestamp {late}" in messages[1]


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
