"""An order pipeline: a service produces order events with ``await producer.send()``; a
Spark structured-streaming job reads them through the "aiokafka_lead" data source,
aggregates spend per customer and minute, and writes the totals back to a Kafka topic and
to parquet.

    python examples/spark_pipeline.py --bootstrap-server 127.0.0.1:9092 --out /tmp/orders
    python examples/spark_pipeline.py --bootstrap-server H:P --master spark://host:7077 --out /shared/orders

On a real Spark cluster, install aiokafka_lead[spark] on every executor and point
PYSPARK_PYTHON at that environment's interpreter (this script sets it for local runs).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.errors import TopicAlreadyExistsError

ORDER_SCHEMA = "order_id long, customer string, amount_cents long, event_time timestamp"


async def produce_orders(bootstrap: str, topic: str, count: int, seed: int) -> int:
    """The service side: many small sends through one long-lived producer."""
    rng = random.Random(seed)
    now = time.time()
    total = 0
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        handles = []
        for order_id in range(count):
            amount = rng.randint(100, 10_000)
            total += amount
            event = {
                "order_id": order_id,
                "customer": f"customer-{rng.randint(1, 20)}",
                "amount_cents": amount,
                "event_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - rng.randint(0, 600))),
            }
            handles.append(
                await producer.send(topic, json.dumps(event).encode(), key=event["customer"].encode())
            )
        for handle in handles:
            await handle
    return total


async def ensure_topics(bootstrap: str, *names: str) -> None:
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        for name in names:
            with contextlib.suppress(TopicAlreadyExistsError):  # reruns with explicit names
                await admin.create_topics([NewTopic(name, 3, -1)])


def run_job(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import functions as F

    spark = (
        SparkSession.builder.master(args.master)
        .appName("aiokafka_lead order pipeline")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out = Path(args.out)
    orders = (
        spark.readStream.format("aiokafka_lead")  # found without register(): pyspark_aiokafka_lead
        .option("kafka.bootstrap.servers", args.bootstrap_server)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "2000")
        .load()
        .select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"))
        .select("o.*")
    )
    totals = (
        orders.withWatermark("event_time", "10 minutes")
        .groupBy(F.window("event_time", "1 minute"), "customer")
        .agg(F.sum("amount_cents").alias("amount_cents"), F.count("*").alias("orders"))
    )

    def sink(batch: DataFrame, batch_id: int) -> None:
        rows = batch.select(
            F.col("window.start").alias("window_start"), "customer", "amount_cents", "orders"
        ).withColumn("batch_id", F.lit(batch_id))
        rows.write.mode("append").parquet(str(out / "totals"))
        rows.select(
            F.col("customer").cast("binary").alias("key"),
            F.to_json(F.struct("*")).cast("binary").alias("value"),
        ).write.format("aiokafka_lead").option("kafka.bootstrap.servers", args.bootstrap_server).option(
            "topic", args.totals_topic
        ).mode("append").save()
        print(f"  micro-batch {batch_id}: {rows.count()} window totals updated", flush=True)

    query = (
        totals.writeStream.outputMode("update")
        .foreachBatch(sink)
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    # update mode emits a window again when it changes: its last emission is its total
    final = spark.read.parquet(str(out / "totals"))
    latest = final.groupBy("window_start", "customer").agg(F.max("batch_id").alias("batch_id"))
    result = final.join(latest, ["window_start", "customer", "batch_id"])
    summary = result.agg(F.sum("amount_cents").alias("amount"), F.sum("orders").alias("orders")).first()
    spark.stop()
    return {"amount_cents": int(summary["amount"] or 0), "orders": int(summary["orders"] or 0)}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    run = time.strftime("%Y%m%d%H%M%S")
    parser.add_argument("--topic", default=f"orders-{run}", help="default: a new topic per run")
    parser.add_argument("--totals-topic", default=f"order-totals-{run}")
    parser.add_argument("--orders", type=int, default=5000)
    parser.add_argument("--out", required=True, help="directory for parquet output and the checkpoint")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    anyio.run(ensure_topics, args.bootstrap_server, args.topic, args.totals_topic)
    print(f"producing {args.orders} order events to {args.topic}...", flush=True)
    expected = anyio.run(produce_orders, args.bootstrap_server, args.topic, args.orders, args.seed)
    print("running the streaming job (availableNow)...", flush=True)
    result = run_job(args)
    print(f"orders aggregated: {result['orders']} of {args.orders}")
    print(f"amount aggregated: {result['amount_cents']} of {expected} cents")
    ok = result["orders"] == args.orders and result["amount_cents"] == expected
    print("totals match" if ok else "TOTALS DIFFER", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
