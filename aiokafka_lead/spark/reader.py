"""Reading Kafka from Spark: batch and streaming readers over exact offset ranges.

Each Spark task reads one offset range [start, end) of a partition (a partition's range may
be split across tasks: minPartitions, maxRecordsPerPartition) with a consumer in assign
mode (no consumer group), deterministically: Spark may re-run a task and must get the same
rows. A range ends by POSITION, not by the last record's offset, so it terminates across
gaps (compacted records, transaction markers). Tasks yield ``pyarrow.RecordBatch`` objects
built from the decoded Kafka batches (``arrow.py``); the worker's consumer is reused across
tasks (``bridge.clients``).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from aiokafka_lead.consumer import AIOKafkaConsumer
from aiokafka_lead.errors import KafkaError, OffsetOutOfRangeError
from aiokafka_lead.spark import arrow
from aiokafka_lead.spark.bridge import (
    admin_session,
    clients,
    list_offsets,
    offsets_for,
    subscribed_partitions,
)
from aiokafka_lead.spark.offsets import (
    OffsetRange,
    Offsets,
    cap_rows,
    check_batch_bounds,
    from_json_dict,
    parse_spec,
    plan_ranges,
    split_ranges,
    to_json_dict,
)
from aiokafka_lead.spark.options import EARLIEST, LATEST, Bound, SourceOptions, SparkOptionError
from aiokafka_lead.structs import TopicPartition

#: records decoded into one Arrow record batch at most
MAX_RECORDS_PER_BATCH = 50_000
#: bytes one fetch brings per partition
PARTITION_FETCH_BYTES = 8 * 1024 * 1024
#: how long a fetch waits at a partition's end: a task
#: reads only offsets that exist, so the only fetch that waits is the one past its range's end,
#: which the next task on the worker's reused consumer would otherwise wait for
FETCH_WAIT_MS = 10


class DataLossError(KafkaError):
    """Offsets Spark planned to read are gone (retention, deletion) and failOnDataLoss is on."""


class RangePartition(InputPartition):
    def __init__(self, value: OffsetRange) -> None:
        super().__init__(value)
        self.range = value


def _consumer_key(opts: SourceOptions) -> tuple[Any, ...]:
    return ("consumer", opts.bootstrap_servers, opts.properties, opts.isolation_level, opts.group_id_prefix)


def _new_consumer(opts: SourceOptions) -> AIOKafkaConsumer[bytes, bytes]:
    kwargs = {
        "max_partition_fetch_bytes": PARTITION_FETCH_BYTES,
        "fetch_max_wait_ms": FETCH_WAIT_MS,
        **opts.client_kwargs(),
    }
    kwargs.setdefault("client_id", f"{opts.group_id_prefix}-executor")
    return AIOKafkaConsumer(
        bootstrap_servers=opts.bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="none",
        isolation_level=opts.isolation_level,
        **kwargs,
    )


def _assign_at(consumer: AIOKafkaConsumer[bytes, bytes], tp: TopicPartition, offset: int) -> None:
    consumer.assign([tp])
    consumer.seek(tp, offset)


def read_range(opts: SourceOptions, rng: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Every record of ``rng`` in offset order, as record batches; ends once the position
    reaches ``rng.end``."""
    tp = TopicPartition(rng.topic, rng.partition)
    key = _consumer_key(opts)
    p, consumer = clients.get(key, functools.partial(_new_consumer, opts))
    try:
        p.call(_assign_at, consumer, tp, rng.start)  # one call: no reset may run in between
        while (position := p.call(consumer.position, tp)) < rng.end:
            try:
                chunks = p.call(
                    functools.partial(
                        consumer.getmany_batches,
                        tp,
                        timeout_ms=opts.poll_timeout_ms,
                        max_records=MAX_RECORDS_PER_BATCH,
                    )
                )
            except OffsetOutOfRangeError as exc:
                if opts.fail_on_data_loss:
                    raise DataLossError(
                        f"{rng.topic}-{rng.partition}: offsets from {position} are no longer available "
                        f"({exc}); set failOnDataLoss=false to skip what was lost"
                    ) from exc
                p.call(consumer.seek_to_beginning, tp)
                continue
            got = chunks.get(tp, [])
            if not got and p.call(consumer.position, tp) < rng.end:
                raise DataLossError(
                    f"{rng.topic}-{rng.partition}: no records at {position} within "
                    f"{opts.poll_timeout_ms} ms although the range ends at {rng.end}"
                )
            batch = arrow.record_batch(got, rng.end, rng.topic, rng.partition, opts.include_headers)
            if batch.num_rows:
                yield batch
        p.call(consumer.unsubscribe)  # no prefetching for a range that is done
    except Exception:
        clients.drop(key)
        raise


def _resolve(
    bound: Bound,
    partitions: list[TopicPartition],
    session: tuple[Any, Any],
    opts: SourceOptions,
    name: str,
    *,
    starting: bool,
) -> Offsets:
    """Concrete offsets for every partition: offsets (-2/-1 looked up, JSON checked) or the
    first offset at or after a timestamp (ListOffsets by time)."""
    if bound.is_timestamp:
        return _by_timestamp(bound, partitions, session, opts, name, starting=starting)
    p, admin = session
    spec = parse_spec(bound.offsets, name)
    wanted: Offsets = dict.fromkeys(partitions, spec) if isinstance(spec, int) else dict(spec)
    _covered(wanted, partitions, name)
    for tp in partitions:
        wanted.setdefault(tp, EARLIEST)  # partitions the JSON leaves out start at earliest, as in Spark
    out: Offsets = {}
    for special in (EARLIEST, LATEST):
        chosen = [tp for tp, o in wanted.items() if o == special]
        out.update(list_offsets(p, admin, chosen, special, opts.isolation_level))
    out.update({tp: o for tp, o in wanted.items() if o >= 0})
    return {tp: out[tp] for tp in sorted(out)}


def _covered(wanted: Offsets, partitions: list[TopicPartition], name: str) -> None:
    for tp in wanted:
        if tp not in partitions:
            raise SparkOptionError(
                f"{name} names {tp.topic}-{tp.partition}, which the subscription does not cover"
            )


def _by_timestamp(
    bound: Bound,
    partitions: list[TopicPartition],
    session: tuple[Any, Any],
    opts: SourceOptions,
    name: str,
    *,
    starting: bool,
) -> Offsets:
    """The first offset whose timestamp is at or after the bound's, per partition. Where no
    record is that late: the latest offset for an end; for a start, an error or the latest
    offset (startingOffsetsByTimestampStrategy)."""
    p, admin = session
    if bound.timestamp is not None:
        times = dict.fromkeys(partitions, bound.timestamp)
    else:
        try:
            times = from_json_dict(json.loads(bound.by_timestamp or ""))
        except (ValueError, TypeError, AttributeError) as exc:
            raise SparkOptionError(
                f'{name} must be JSON like {{"t": {{"0": 1700000000000}}}}: {exc}'
            ) from exc
        _covered(times, partitions, name)
        missing = sorted(tp for tp in partitions if tp not in times)
        if missing:
            raise SparkOptionError(f"{name} must give a timestamp for every partition; missing: {missing}")
    found = offsets_for(p, admin, times, opts.isolation_level)
    unmatched = sorted(tp for tp, offset in found.items() if offset < 0)
    if unmatched and starting and opts.timestamp_strategy == "error":
        tp = unmatched[0]
        raise SparkOptionError(
            f"No offset matched from request of topic-partition {tp.topic}-{tp.partition} "
            f"and timestamp {times[tp]}."
        )
    found.update(list_offsets(p, admin, unmatched, LATEST, opts.isolation_level))
    return {tp: found[tp] for tp in sorted(found)}


class BatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions) -> None:
        check_batch_bounds(opts.starting, opts.ending)
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        with admin_session(self.opts) as session:
            parts = subscribed_partitions(*session, self.opts)
            start = _resolve(self.opts.starting, parts, session, self.opts, "startingOffsets", starting=True)
            end = _resolve(self.opts.ending, parts, session, self.opts, "endingOffsets", starting=False)
        return _plan(self.opts, start, end)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return iter(())  # Spark's stand-in when partitions() planned nothing to read
        return read_range(self.opts, partition.range)


def _plan(opts: SourceOptions, start: Offsets, end: Offsets) -> list[InputPartition]:
    ranges = split_ranges(plan_ranges(start, end), opts.min_partitions, opts.max_records_per_partition)
    return [RangePartition(r) for r in ranges]


def _admission_control() -> Any:
    """Spark's ReadMinRows: Python sources get it from PySpark 4.2 on."""
    try:
        from pyspark.sql.streaming.datasource import ReadMinRows
    except ImportError:
        import pyspark

        raise SparkOptionError(
            f"minOffsetsPerTrigger needs admission control for Python data sources (ReadMinRows, "
            f"PySpark 4.2 or later); this is PySpark {pyspark.__version__}"
        ) from None
    return ReadMinRows


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of offset ranges; maxOffsetsPerTrigger, minOffsetsPerTrigger with
    maxTriggerDelay; Trigger.AvailableNow."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._available_now: dict[str, dict[str, int]] | None = None
        self._min_rows = _admission_control() if opts.min_offsets_per_trigger else None
        self._last_trigger_ms = 0.0  # as Spark's connector: the first trigger is never delayed

    def _latest(self) -> Offsets:
        with admin_session(self.opts) as session:
            parts = subscribed_partitions(*session, self.opts)
            return list_offsets(*session, parts, LATEST, self.opts.isolation_level)

    def initialOffset(self) -> dict[str, dict[str, int]]:
        with admin_session(self.opts) as session:
            parts = subscribed_partitions(*session, self.opts)
            return to_json_dict(
                _resolve(self.opts.starting, parts, session, self.opts, "startingOffsets", starting=True)
            )

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self._min_rows is not None:
            limit: ReadLimit = self._min_rows(self.opts.min_offsets_per_trigger)
            return limit
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = to_json_dict(self._latest())

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        latest = self._latest()
        if self._available_now is not None:
            target = from_json_dict(self._available_now)
            latest = {tp: min(o, target.get(tp, o)) for tp, o in latest.items()}
        begin = from_json_dict(start)
        if self._delay(begin, latest):
            return start
        if isinstance(limit, ReadMaxRows):
            latest = cap_rows(begin, latest, limit.max_rows)
        self._last_trigger_ms = time.time() * 1000
        # never behind where the previous batch ended (a partition can only grow)
        return to_json_dict({tp: max(o, begin.get(tp, o)) for tp, o in latest.items()})

    def _delay(self, begin: Offsets, latest: Offsets) -> bool:
        """minOffsetsPerTrigger: wait for that many new offsets, at most maxTriggerDelay."""
        wanted = self.opts.min_offsets_per_trigger
        if wanted is None or self._available_now is not None:
            return False
        backlog = sum(max(0, o - begin.get(tp, o)) for tp, o in latest.items())
        waited = time.time() * 1000 - self._last_trigger_ms
        return backlog < wanted and waited < self.opts.max_trigger_delay_ms

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
        return _plan(self.opts, {tp: begin.get(tp, 0) for tp in finish}, finish)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        return read_range(self.opts, partition.range)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint, not in a consumer group."""
