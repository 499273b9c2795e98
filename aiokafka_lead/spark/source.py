"""The "aiokafka_lead" Spark data source (Python Data Source API, PySpark 4.x)."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from aiokafka_lead.spark.options import parse_options
from aiokafka_lead.spark.reader import BatchReader, StreamReader
from aiokafka_lead.spark.writer import BatchWriter, StreamWriter

BASE_SCHEMA = ", ".join(
    [
        "key binary",
        "value binary",
        "topic string",
        "partition int",
        "offset long",
        "timestamp timestamp",
        "timestampType int",
    ]
)
HEADERS_FIELD = ", headers array<struct<key: string, value: binary>>"


class UnsupportedSaveModeError(ValueError):
    """A batch save mode other than append (Kafka topics cannot be overwritten)."""


class KafkaDataSource(DataSource):
    """``spark.read.format("aiokafka_lead")``: rows and options as in Spark's Kafka connector."""

    @classmethod
    def name(cls) -> str:
        return "aiokafka_lead"

    def schema(self) -> str:
        include = str(self.options.get("includeheaders", self.options.get("includeHeaders", "false"))).lower()
        return BASE_SCHEMA + (HEADERS_FIELD if include == "true" else "")

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(parse_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(parse_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise UnsupportedSaveModeError(
                'the aiokafka_lead data source cannot honour save mode "overwrite": a Kafka topic '
                'is an append-only log. Use .mode("append"), the only batch save mode that works '
                '(Spark itself refuses the default "errorifexists" and "ignore" for Python data sources)'
            )
        return BatchWriter(parse_options(self.options, streaming=False, sink=True))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        # every output mode writes the rows it is given, as Spark's own Kafka sink does
        return StreamWriter(parse_options(self.options, streaming=True, sink=True))


def register(spark: Any) -> None:
    """Make ``format("aiokafka_lead")`` available in this SparkSession."""
    spark.dataSource.register(KafkaDataSource)
