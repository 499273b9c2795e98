"""The optional C speedups (``aiokafka_lead/_speedups.c``, ``_speedups_producer.c``, ``_speedups_send.c``,
``_speedups_producer_columns.c``, ``_speedups_share.c``, ``_speedups_columns.c``,
``_speedups_produce_wire.c``), set up once.

``decode_records`` and ``build_consumer_records`` are the consumer's C loops;
``build_share_records`` the share consumer's (its record class is bound by
``share/acquire.py`` through ``configure_share``, so this codec module names no share type);
``RecordsBuffer`` (the base class of ``records.builder.RecordBatchBuilder``),
``HandleFields`` (the base class of ``producer.batch.DeliveryHandle``), ``SendPath``
(``send()``'s common case, ``_speedups_send.c``), ``murmur2`` and
``now_ms`` the producer's per-record steps, ``encode_produce`` and ``decode_produce_written``
its per-request ones (``protocol/produce_wire.py``); each is ``None`` when the extension was not built (no
compiler at install time, another interpreter) or the environment variable
``AIOKAFKA_LEAD_NO_EXTENSIONS`` is set; callers then run the pure-Python code, which stays
the reference. Both give the same results and raise the same error classes; the tests run
every record decoding test both ways by setting the decoder attributes to ``None``, and
compare ``RecordBatchBuilder`` with ``PyRecordBatchBuilder`` and each C function with its
Python twin.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Iterator
from dataclasses import fields
from typing import Any

from aiokafka_lead.errors import CorruptRecordError, DecodeError
from aiokafka_lead.records.record import Record
from aiokafka_lead.structs import ConsumerRecord

__all__ = [
    "HandleFields",
    "RecordsBuffer",
    "SendPath",
    "build_consumer_records",
    "build_share_records",
    "configure_share",
    "decode_produce_written",
    "decode_records",
    "encode_produce",
    "gc_paused",
    "key_partitions",
    "murmur2",
    "now_ms",
    "record_columns",
    "unavailable_reason",
]

#: (buf, pos, end, count, base_offset, base_timestamp, log_append_time) -> records
DecodeRecords = Callable[[bytes, int, int, int, int, int, int | None], list[Record]]
#: (rows, topic, partition, timestamp_type, leader_epoch) -> ConsumerRecords
BuildConsumerRecords = Callable[[list[Record], str, int, int, int], list[ConsumerRecord[Any, Any]]]

#: (rows, topic, partition, timestamp_type, leader_epoch, ranges, lock_deadline, floor) -> records
BuildShareRecords = Callable[
    [list[Record], str, int, int, int, list[tuple[int, int, int]], float, int], list[Any]
]

#: ConsumerRecord's fields in the order the C builder fills them
CONSUMER_RECORD_FIELDS = (
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestamp_type",
    "key",
    "value",
    "checksum",
    "serialized_key_size",
    "serialized_value_size",
    "headers",
    "leader_epoch",
)

#: the ``_speedups.ABI`` this module calls (configure's signature, the functions' contracts)
ABI = 10

decode_records: DecodeRecords | None = None
build_consumer_records: BuildConsumerRecords | None = None
build_share_records: BuildShareRecords | None = None
#: binds the share record class's slots: (class, field names) -> None
configure_share: Callable[[type[Any], tuple[str, ...]], None] | None = None
#: the C base class of ``RecordBatchBuilder`` (the producer's per-record step)
RecordsBuffer: type[Any] | None = None
#: the C base class of the producer's ``DeliveryHandle`` (its four fields)
HandleFields: type[Any] | None = None
#: the producer's send() common case in one call (``_speedups_send.c``)
SendPath: type[Any] | None = None
#: Kafka's murmur2 (signed int32) of a bytes-like key
murmur2: Callable[[bytes | bytearray | memoryview], int] | None = None
#: (keys, rows, num_partitions) -> int32 partition per row of an Arrow key column (-1: null)
key_partitions: Callable[[Any, int, int], bytes] | None = None
#: wall-clock milliseconds since the epoch
now_ms: Callable[[], int] | None = None
#: (chunks, end_offset, headers) -> Arrow column buffers of decoded records (``_speedups_columns.c``)
record_columns: Callable[[list[Any], int, bool], tuple[Any, ...]] | None = None
#: (version, correlation_id, client_id, transactional_id, acks, timeout_ms, topics) -> the
#: Produce request frame (``protocol/produce_wire.py``)
encode_produce: Callable[..., bytes | list[bytes | memoryview]] | None = None
#: (frame, version) -> (throttle_time_ms, rows) of an all-written Produce answer, else None
ProduceRows = list[tuple[str, int, int, int, int]]
decode_produce_written: Callable[[Any, int], tuple[int, ProduceRows] | None] | None = None
#: why the extension is not in use, ``None`` when it is
unavailable_reason: str | None = None


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic GC while records are decoded and built (synchronous, no await): the
    consumer's poll, the share consumer's answer.

    That allocates a few objects per record, and most survive into the caller's hands;
    left on, the collector would run every 700 allocations and repeatedly walk the older
    generations, which costs as much as decoding. Paused, the next allocation after this
    block collects the new objects once. Nothing here creates reference cycles.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _load() -> None:
    global HandleFields, RecordsBuffer, build_consumer_records, decode_records, murmur2, now_ms
    global build_share_records, configure_share, record_columns, key_partitions, SendPath
    global unavailable_reason, encode_produce, decode_produce_written
    if os.environ.get("AIOKAFKA_LEAD_NO_EXTENSIONS"):
        unavailable_reason = "disabled by AIOKAFKA_LEAD_NO_EXTENSIONS"
        return
    try:
        # the extension module itself, not the package (whose __init__ imports the clients)
        import aiokafka_lead._speedups as _speedups  # noqa: PLR0402
    except ImportError as exc:
        unavailable_reason = f"not built: {exc}"
        return
    built = getattr(_speedups, "ABI", 1)
    if built != ABI:  # built from an older _speedups.c: its checks differ, so do not use it
        unavailable_reason = f"stale build (ABI {built}, need {ABI}): rebuild with setup.py build_ext"
        return
    names = tuple(f.name for f in fields(ConsumerRecord))
    if names != CONSUMER_RECORD_FIELDS:  # the C side fills slots in this order
        raise RuntimeError(f"ConsumerRecord fields changed: {names}; update _speedups.c and native.py")
    _speedups.configure(Record, ConsumerRecord, CONSUMER_RECORD_FIELDS, DecodeError, CorruptRecordError)
    decode_records = _speedups.decode_records
    build_consumer_records = _speedups.build_consumer_records
    build_share_records = _speedups.build_share_records
    configure_share = _speedups.configure_share
    RecordsBuffer = _speedups.RecordsBuffer
    HandleFields = _speedups.HandleFields
    SendPath = _speedups.SendPath
    murmur2 = _speedups.murmur2
    key_partitions = _speedups.key_partitions
    now_ms = _speedups.now_ms
    record_columns = getattr(_speedups, "record_columns", None)
    encode_produce = _speedups.encode_produce
    decode_produce_written = _speedups.decode_produce_written


_load()
