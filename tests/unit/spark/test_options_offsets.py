"""Spark source options and offsets: pure logic, no Spark or Kafka needed."""

from __future__ import annotations

import json

import pytest

from aiokafka_lead.spark.offsets import (
    OffsetRange,
    cap_rows,
    check_batch_bounds,
    from_json_dict,
    parse_spec,
    plan_ranges,
    split_ranges,
    to_json_dict,
)
from aiokafka_lead.spark.options import (
    EARLIEST,
    LATEST,
    Bound,
    SparkOptionError,
    parse_options,
    time_string_ms,
)
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
        ({"subscribe": "a"}, "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka"),
        ({**BASE}, "One of the following options must be specified for Kafka source: subscribe, subscribep"),
        ({**BASE, "subscribe": "a", "assign": '{"a": [0]}'}, "Only one of the following options can be"),
        ({**BASE, "assign": "not json"}, "No topicpartitions to assign as specified value for option"),
        ({**BASE, "assign": "{oops"}, "assign must be JSON"),
        ({**BASE, "subscribe": " , "}, "No topics to subscribe to as specified value for option 'subscribe'"),
        ({**BASE, "subscribe": "a", "minPartitions": "0"}, "minPartitions must be positive"),
        ({**BASE, "subscribe": "a", "maxRecordsPerPartition": "-1"}, "maxrecordsperpartition must be"),
        ({**BASE, "subscribe": "a", "startingTimestamp": "noon"}, "Expected a single long value, got noon"),
        (
            {**BASE, "subscribe": "a", "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"},
            r"The value of minOffsetPerTrigger\(10\) is higher than the maxOffsetsPerTrigger\(5\)\.",
        ),
        ({**BASE, "subscribe": "a", "maxTriggerDelay": "soon"}, "maxTriggerDelay: 'soon' is not a duration"),
        ({**BASE, "subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "'auto.offset.reset' is not"),
        ({**BASE, "subscribe": "a", "kafka.enable.auto.commit": "true"}, "'enable.auto.commit' is not"),
        ({**BASE, "subscribe": "a", "failondataloss": "maybe"}, "true or false"),
        ({**BASE, "subscribe": "a", "kafka.security.protocol": "SASL_SSL"}, "sasl.jaas.config"),
        ({**BASE, "subscribe": "a", "kafka.no.such.option": "1"}, "unsupported client properties"),
    ],
)
def test_bad_options_are_clear_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(SparkOptionError, match=message):
        parse_options(options, streaming=False)


def test_streaming_rejects_ending_offsets() -> None:
    with pytest.raises(SparkOptionError, match="ending offset not valid in streaming queries"):
        parse_options({**BASE, "subscribe": "a", "endingoffsets": "latest"}, streaming=True)
    with pytest.raises(SparkOptionError, match="ending timestamp not valid in streaming queries"):
        parse_options({**BASE, "subscribe": "a", "endingOffsetsByTimestamp": "{}"}, streaming=True)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"startingOffsets": "latest"}, "starting offset can't be latest for batch queries on Kafka"),
        ({"startingOffsets": '{"a": {"0": -1}}'}, "startingOffsets for a-0 can't be latest for batch"),
        ({"endingOffsets": "earliest"}, "ending offset can't be earliest for batch queries on Kafka"),
        ({"endingOffsets": '{"a": {"1": -2}}'}, "ending offset for a-1 can't be earliest for batch queries"),
    ],
)
def test_batch_bounds_are_checked_as_spark_does(options: dict[str, str], message: str) -> None:
    opts = parse_options({**BASE, "subscribe": "a", **options}, streaming=False)
    with pytest.raises(SparkOptionError, match=message):
        check_batch_bounds(opts.starting, opts.ending)


def test_timestamps_take_precedence_over_offsets() -> None:
    raw = {**BASE, "subscribe": "a", "startingOffsets": "earliest", "endingOffsets": "latest"}
    both = parse_options({**raw, "startingTimestamp": "5", "startingOffsetsByTimestamp": '{"a": {"0": 7}}'},
                         streaming=False)  # fmt: skip
    assert both.starting == Bound("earliest", timestamp=5)
    by_partition = parse_options({**raw, "endingOffsetsByTimestamp": '{"a": {"0": 7}}'}, streaming=False)
    assert by_partition.ending == Bound("latest", by_timestamp='{"a": {"0": 7}}')
    assert by_partition.starting == Bound("earliest") and not by_partition.starting.is_timestamp


def test_trigger_options_and_their_defaults() -> None:
    opts = parse_options({**BASE, "subscribe": "a", "minOffsetsPerTrigger": "3"}, streaming=True)
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (3, 15 * 60_000)
    assert opts.group_id_prefix == "spark-kafka-source"
    batch = parse_options({**BASE, "subscribe": "a"}, streaming=False)
    assert batch.group_id_prefix == "spark-kafka-relation"
    assert time_string_ms("500ms", "x") == 500 and time_string_ms("2h", "x") == 7_200_000
    assert time_string_ms("30", "x") == 30 and time_string_ms("1 min", "x") == 60_000


def test_split_ranges_by_min_partitions_as_spark_plans_them() -> None:
    big, small = OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 0, 10)
    assert split_ranges([big, small, OffsetRange("t", 2, 5, 5)], 4, None) == [
        OffsetRange("t", 0, 0, 33),
        OffsetRange("t", 0, 33, 66),
        OffsetRange("t", 0, 66, 100),
        small,
    ]
    assert split_ranges([big, small], 2, None) == [big, small]  # enough ranges already
    assert split_ranges([big, small], None, None) == [big, small]


def test_split_ranges_by_max_records_per_partition() -> None:
    parts = split_ranges([OffsetRange("t", 0, 10, 110), OffsetRange("t", 1, 0, 30)], None, 30)
    assert [(r.partition, r.start, r.end) for r in parts] == [
        (0, 10, 35), (0, 35, 60), (0, 60, 85), (0, 85, 110), (1, 0, 30)
    ]  # fmt: skip
    assert all(r.end - r.start <= 30 for r in parts)


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
