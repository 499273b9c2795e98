"""minOffsetsPerTrigger / maxTriggerDelay: when a micro-batch waits, and the error where
PySpark offers no admission control to Python sources."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("pyspark", reason="install aiokafka_lead[spark]")

from pyspark.sql.streaming import datasource

from aiokafka_lead.spark.options import SparkOptionError, parse_options
from aiokafka_lead.spark.reader import StreamReader
from aiokafka_lead.structs import TopicPartition as TP

BASE = {"kafka.bootstrap.servers": "h:9092", "subscribe": "t"}


def test_a_micro_batch_waits_for_min_offsets_at_most_max_trigger_delay() -> None:
    reader = StreamReader(
        parse_options({**BASE, "minOffsetsPerTrigger": "10", "maxTriggerDelay": "1h"}, streaming=True)
    )
    assert reader.getDefaultReadLimit() == datasource.ReadMinRows(10)
    begin = {TP("t", 0): 0, TP("t", 1): 0}
    few = {TP("t", 0): 3, TP("t", 1): 2}
    enough = {TP("t", 0): 6, TP("t", 1): 4}
    assert not reader._delay(begin, few)  # the first trigger is never delayed, as in Spark
    reader._last_trigger_ms = time.time() * 1000
    assert reader._delay(begin, few)
    assert not reader._delay(begin, enough)
    reader._last_trigger_ms = time.time() * 1000 - 3_600_001  # maxTriggerDelay passed
    assert not reader._delay(begin, few)
    reader._last_trigger_ms = time.time() * 1000
    reader._available_now = {}  # Trigger.AvailableNow reads what there is
    assert not reader._delay(begin, few)


def test_max_offsets_per_trigger_is_the_default_limit_when_both_are_set() -> None:
    opts = parse_options({**BASE, "minOffsetsPerTrigger": "5", "maxOffsetsPerTrigger": "50"}, streaming=True)
    assert StreamReader(opts).getDefaultReadLimit() == datasource.ReadMaxRows(50)


def test_without_admission_control_the_error_names_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyspark

    monkeypatch.delattr(datasource, "ReadMinRows")
    opts = parse_options({**BASE, "minOffsetsPerTrigger": "10"}, streaming=True)
    named = rf"PySpark 4\.2 or later\); this is PySpark {pyspark.__version__}"
    with pytest.raises(SparkOptionError, match=named):
        StreamReader(opts)
