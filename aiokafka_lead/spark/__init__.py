"""Spark integration (``pip install 'aiokafka_lead[spark]'``): a Python data source named
"aiokafka_lead" for batch and streaming reads and writes, like Spark's built-in Kafka connector.

    from aiokafka_lead.spark import register
    register(spark)
    df = spark.read.format("aiokafka_lead").option("kafka.bootstrap.servers", "h:9092") \\
        .option("subscribe", "orders").load()
"""

from aiokafka_lead.spark.source import KafkaDataSource, register

__all__ = ["KafkaDataSource", "register"]
