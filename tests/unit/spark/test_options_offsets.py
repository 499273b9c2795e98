"""Spark source options and offsets: pure logic, no Spark or Kafka needed."""

from __future__ import annotations

import json

import pytest

from aiokafka_lead.spark.offsets import (
    OffsetRange,
    cap_rows,
    from_json_dict,
    parse_spec,
    plan_ranges,
    to_json_dict,
)
from aiokafka_lead.spark.options import EARLIEST, LATEST, SparkOptionError, parse_options
from aiokafka_lead.structs import TopicPartition as TP

BASE = {"kafka.bootstrap.servers": "h:9092"}


def test_keys_arrive_lower_cased_and_are_read_case_insensitively() -> None:
    raw = {**BASE, "subscribepattern": "orders-.*", "startingoffsets": "earliest"}
    raw.update({"maxOffsetsPerTrigger": "100", "failOnDataLoss": "false", "includeheaders": "true"})
    opts = parse_options(raw, streaming=True)
    assert opts.subscribe_pattern == "orders-.*"
    assert opts.max_offsets_per_trigger == 100
    assert opts.fail_on_data_loss is False and opts.include_headers is True


def test_defaults_follow_spark_kafka_connector() -> None:
    assert parse_options({**BASE, "subscribe": "a,b"}, streaming=True).starting_offsets == "latest"
    batch = parse_options({**BASE, "subscribe": "a"}, streaming=False)
    assert (batch.starting_offsets, batch.ending_offsets) == ("earliest", "latest")
    assert parse_options({**BASE, "assign": '{"t": [1, 0]}'}, streaming=False).assign == (("t", 0), ("t", 1))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "a"}, "kafka.bootstrap.servers is required"),
        ({**BASE}, "exactly one of subscribe"),
        ({**BASE, "subscribe": "a", "assign": '{"a": [0]}'}, "exactly one of subscribe"),
        ({**BASE, "assign": "not json"}, "assign must be JSON"),
        ({**BASE, "subscribe": "a", "failondataloss": "maybe"}, "true or false"),
        ({**BASE, "subscribe": "a", "kafka.security.protocol": "SASL_SSL"}, "sasl.jaas.config"),
        ({**BASE, "subscribe": "a", "kafka.no.such.option": "1"}, "unsupported client properties"),
    ],
)
def test_bad_options_are_clear_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(SparkOptionError, match=message):
        parse_options(options, streaming=False)


def test_streaming_rejects_ending_offsets() -> None:
    with pytest.raises(SparkOptionError, match="batch queries only"):
        parse_options({**BASE, "subscribe": "a", "endingoffsets": "latest"}, streaming=True)


def test_offsets_json_has_a_fixed_sorted_order() -> None:
    offsets = {TP("b", 10): 5, TP("a", 2): 1, TP("b", 2): 7, TP("a", 0): 3}
    text = json.dumps(to_json_dict(offsets))
    assert text == '{"a": {"0": 3, "2": 1}, "b": {"2": 7, "10": 5}}'
    assert from_json_dict(json.loads(text)) == offsets
    assert json.dumps(to_json_dict(dict(reversed(list(offsets.items()))))) == text


def test_offset_specs() -> None:
    assert parse_spec("earliest", "x") == EARLIEST and parse_spec(" LATEST ", "x") == LATEST
    assert parse_spec('{"t": {"0": -2, "1": 17}}', "x") == {TP("t", 0): -2, TP("t", 1): 17}
    with pytest.raises(SparkOptionError, match="startingOffsets must be"):
        parse_spec("{oops", "startingOffsets")


def test_plan_ranges_skips_empty_and_keeps_order() -> None:
    start = {TP("t", 1): 5, TP("t", 0): 0, TP("t", 2): 9}
    end = {TP("t", 2): 9, TP("t", 0): 4, TP("t", 1): 8}
    assert plan_ranges(start, end) == [OffsetRange("t", 0, 0, 4), OffsetRange("t", 1, 5, 8)]


def test_cap_rows_shares_the_limit_by_backlog() -> None:
    start = {TP("t", 0): 0, TP("t", 1): 100}
    latest = {TP("t", 0): 300, TP("t", 1): 200}
    capped = cap_rows(start, latest, 100)
    assert capped == {TP("t", 0): 75, TP("t", 1): 125}
    assert sum(capped[tp] - start[tp] for tp in start) <= 100
    assert cap_rows(start, latest, 10_000) == latest
