from collections.abc import Sequence
from typing import Any, Self

from aiokafka_lead.records.native import BuildConsumerRecords, BuildShareRecords, DecodeRecords

ABI: int

def configure(
    record: type[Any],
    consumer_record: type[Any],
    field_names: tuple[str, ...],
    decode_error: type[Exception],
    corrupt_error: type[Exception],
) -> None: ...

# The signatures native.py gives the C loops (the same as their pure-Python twins').
decode_records: DecodeRecords
build_consumer_records: BuildConsumerRecords
build_share_records: BuildShareRecords

def configure_share(share_record: type[Any], field_names: tuple[str, ...], /) -> None: ...

class RecordsBuffer:
    _count: int
    _records_size: int
    _base_timestamp: int
    _max_timestamp: int
    _records_limit: float
    _sealed: bool
    def append(
        self,
        timestamp_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] = (),
    ) -> int | None: ...
    def append_column(
        self, timestamp_ms: int, rows: int, values: Any | None, keys: Any | None, start: int, /
    ) -> int: ...
    def _records_bytes(self) -> bytes: ...
    def _sealed_records(self) -> memoryview: ...

def murmur2(data: bytes | bytearray | memoryview, /) -> int: ...
def key_partitions(keys: Any, rows: int, num_partitions: int, /) -> bytes: ...
def now_ms() -> int: ...

class HandleFields:
    _batch: Any
    _index: int
    _timestamp: int
    _cancelled: bool
    def __new__(cls, batch: Any, index: int, timestamp: int) -> Self: ...

def record_columns(
    chunks: list[Any], end_offset: int, headers: bool, /
) -> tuple[Any, ...]: ...

class SendPath:
    def __init__(
        self,
        *,
        views: dict[str, Any],
        store: Any,
        accumulator: Any,
        sticky: dict[str, Any],
        handle_type: type[HandleFields],
        buffer_memory: int,
        max_request_size: int,
        record_overhead: int,
        yield_mask: int,
    ) -> None: ...
    def append(
        self, topic: str, key: bytes | None, value: bytes | None, timestamp_ms: int | None = None, /
    ) -> Any: ...

def encode_produce(
    version: int,
    correlation_id: int,
    client_id: str | None,
    transactional_id: str | None,
    acks: int,
    timeout_ms: int,
    topics: list[Any],
    /,
) -> bytes: ...
def decode_produce_written(
    frame: Any, version: int, /
) -> tuple[int, list[tuple[str, int, int, int, int]]] | None: ...
