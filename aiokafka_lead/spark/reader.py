"""Reading Kafka from Spark: batch and streaming readers over exact offset ranges.

Each Spark task reads one partition's range [start, end) with a consumer in assign mode
(no consumer group), deterministically: Spark may re-run a task and must get the same
rows. A range ends by POSITION, not by the last record's offset, so it terminates across
gaps (compacted records, transaction markers). Readers hold only picklable options; the
connections open inside ``read()``.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from aiokafka_lead.consumer import AIOKafkaConsumer
from aiokafka_lead.errors import KafkaError, OffsetOutOfRangeError
from aiokafka_lead.spark.bridge import admin_session, list_offsets, portal, subscribed_partitions
from aiokafka_lead.spark.offsets import (
    OffsetRange,
    Offsets,
    cap_rows,
    from_json_dict,
    parse_spec,
    plan_ranges,
    to_json_dict,
)
from aiokafka_lead.spark.options import EARLIEST, LATEST, SourceOptions, SparkOptionError
from aiokafka_lead.structs import TopicPartition

MAX_RECORDS_PER_POLL = 2000
UTC = datetime.UTC


class DataLossError(KafkaError):
    """Offsets Spark planned to read are gone (retention, deletion) and failOnDataLoss is on."""


class RangePartition(InputPartition):
    def __init__(self, value: OffsetRange) -> None:
        super().__init__(value)
        self.range = value


def row_of(record: Any, include_headers: bool) -> tuple[Any, ...]:
    row = (
        record.key,
        record.value,
        record.topic,
        record.partition,
        record.offset,
        datetime.datetime.fromtimestamp(record.timestamp / 1000, tz=UTC),
        record.timestamp_type,
    )
    if include_headers:
        return (*row, [(k, v) for k, v in record.headers])
    return row


def _assign_at(consumer: AIOKafkaConsumer[bytes, bytes], tp: TopicPartition, offset: int) -> None:
    consumer.assign([tp])
    consumer.seek(tp, offset)


def read_range(opts: SourceOptions, rng: OffsetRange) -> Iterator[tuple[Any, ...]]:
    """Every record of ``rng``, in offset order; ends once the position reaches ``rng.end``."""
    tp = TopicPartition(rng.topic, rng.partition)
    with portal() as p:
        consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
            bootstrap_servers=opts.bootstrap_servers,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="none",
            isolation_level=opts.isolation_level,
            **opts.client_kwargs(),
        )
        p.call(consumer.start)
        try:
            p.call(_assign_at, consumer, tp, rng.start)  # one call: no reset may run in between
            while p.call(consumer.position, tp) < rng.end:
                try:
                    batch = p.call(
                        functools.partial(
                            consumer.getmany,
                            tp,
                            timeout_ms=opts.poll_timeout_ms,
                            max_records=MAX_RECORDS_PER_POLL,
                        )
                    )
                except OffsetOutOfRangeError as exc:
                    if opts.fail_on_data_loss:
                        raise DataLossError(
                            f"{rng.topic}-{rng.partition}: offsets from {rng.start} are no longer available "
                            f"({exc}); set failOnDataLoss=false to skip what was lost"
                        ) from exc
                    p.call(consumer.seek_to_beginning, tp)
                    continue
                records = batch.get(tp, [])
                if not records and p.call(consumer.position, tp) < rng.end:
                    raise DataLossError(
                        f"{rng.topic}-{rng.partition}: no records at {p.call(consumer.position, tp)} within "
                        f"{opts.poll_timeout_ms} ms although the range ends at {rng.end}"
                    )
                for record in records:
                    if record.offset >= rng.end:
                        return
                    yield row_of(record, opts.include_headers)
        finally:
            p.call(consumer.stop)


def _resolve(
    spec: Offsets | int,
    partitions: list[TopicPartition],
    session: tuple[Any, Any],
    opts: SourceOptions,
    name: str,
) -> Offsets:
    """Concrete offsets for every partition: -2/-1 (earliest/latest) looked up, JSON checked."""
    p, admin = session
    wanted: Offsets = dict.fromkeys(partitions, spec) if isinstance(spec, int) else dict(spec)
    for tp in wanted:
        if tp not in partitions:
            raise SparkOptionError(
                f"{name} names {tp.topic}-{tp.partition}, which the subscription does not cover"
            )
    for tp in partitions:
        wanted.setdefault(tp, EARLIEST)  # partitions the JSON leaves out start at earliest, as in Spark
    out: Offsets = {}
    for special in (EARLIEST, LATEST):
        chosen = [tp for tp, o in wanted.items() if o == special]
        out.update(list_offsets(p, admin, chosen, special, opts.isolation_level))
    out.update({tp: o for tp, o in wanted.items() if o >= 0})
    return {tp: out[tp] for tp in sorted(out)}


class BatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        with admin_session(self.opts) as (p, admin):
            parts = subscribed_partitions(p, admin, self.opts)
            start = _resolve(
                parse_spec(self.opts.starting_offsets, "startingOffsets"),
                parts,
                (p, admin),
                self.opts,
                "startingOffsets",
            )
            ending = parse_spec(self.opts.ending_offsets, "endingOffsets")
            if ending == EARLIEST or (isinstance(ending, dict) and EARLIEST in ending.values()):
                raise SparkOptionError("endingOffsets cannot be earliest (-2)")
            end = _resolve(ending, parts, (p, admin), self.opts, "endingOffsets")
        return [RangePartition(r) for r in plan_ranges(start, end)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, RangePartition)
        return read_range(self.opts, partition.range)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of offset ranges; rate limited by maxOffsetsPerTrigger; Trigger.AvailableNow."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._available_now: dict[str, dict[str, int]] | None = None

    def _latest(self) -> Offsets:
        with admin_session(self.opts) as (p, admin):
            parts = subscribed_partitions(p, admin, self.opts)
            return list_offsets(p, admin, parts, LATEST, self.opts.isolation_level)

    def initialOffset(self) -> dict[str, dict[str, int]]:
        with admin_session(self.opts) as (p, admin):
            parts = subscribed_partitions(p, admin, self.opts)
            spec = parse_spec(self.opts.starting_offsets, "startingOffsets")
            return to_json_dict(_resolve(spec, parts, (p, admin), self.opts, "startingOffsets"))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = to_json_dict(self._latest())

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        latest = self._latest()
        if self._available_now is not None:
            target = from_json_dict(self._available_now)
            latest = {tp: min(o, target.get(tp, o)) for tp, o in latest.items()}
        begin = from_json_dict(start)
        if isinstance(limit, ReadMaxRows):
            latest = cap_rows(begin, latest, limit.max_rows)
        # never behind where the previous batch ended (a partition can only grow)
        return to_json_dict({tp: max(o, begin.get(tp, o)) for tp, o in latest.items()})

    def reportLatestOffset(self) -> dict[str, dict[str, int]]:
        return to_json_dict(self._latest())

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin, finish = from_json_dict(start), from_json_dict(end)
        if any(tp not in finish for tp in begin) and self.opts.fail_on_data_loss:
            gone = sorted(tp for tp in begin if tp not in finish)
            raise DataLossError(
                f"partitions {gone} disappeared; set failOnDataLoss=false to continue without them"
            )
        # partitions created since the last batch start at their beginning
        start_with_new = {tp: begin.get(tp, 0) for tp in finish}
        return [RangePartition(r) for r in plan_ranges(start_with_new, finish)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, RangePartition)
        return read_range(self.opts, partition.range)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint, not in a consumer group."""
