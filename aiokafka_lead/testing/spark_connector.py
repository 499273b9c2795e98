"""Spark's own Kafka connector (``format("kafka")``, the JVM spark-sql-kafka-0-10) for
comparisons with the "aiokafka_lead" source in one SparkSession: its jars from Maven Central
(cached per user), minus the ones the installed PySpark already ships.

4.2.0 is the newest connector on Maven Central at the time of writing; it runs on PySpark
4.2 and 4.3.
"""

from __future__ import annotations

import re
from pathlib import Path

from aiokafka_lead.testing.cluster.jars import maven_artifact

CONNECTOR = ("org.apache.spark", "spark-sql-kafka-0-10_2.13", "4.2.0")


def _artifact_name(jar: Path) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients``."""
    return re.sub(r"-\d[\w.\-]*$", "", jar.stem)


def connector_jars() -> list[Path]:
    """The connector's jar and the dependencies Spark does not ship (kafka-clients,
    commons-pool2, the token provider): what ``spark.jars`` needs."""
    import pyspark

    shipped = {_artifact_name(j) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = sorted(maven_artifact(*CONNECTOR).glob("*.jar"))
    return [j for j in jars if _artifact_name(j) not in shipped]


def spark_jars_option() -> str:
    """The value of ``spark.jars`` that loads the connector."""
    return ",".join(str(j) for j in connector_jars())
