from collections.abc import Sequence
from typing import Any, Self

ABI: int

def configure(
    record: type[Any],
    consumer_record: type[Any],
    field_names: tuple[str, ...],
    decode_error: type[Exception],
    corrupt_error: type[Exception],
) -> None: ...
def decode_records(
    buf: bytes,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> list[Any]: ...
def build_consumer_records(
    rows: list[Any], topic: str, partition: int, timestamp_type: int, leader_epoch: int
) -> list[Any]: ...

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
    def _records_bytes(self) -> bytes: ...

def murmur2(data: bytes | bytearray | memoryview, /) -> int: ...
def now_ms() -> int: ...

class HandleFields:
    _batch: Any
    _index: int
    _timestamp: int
    _cancelled: bool
    def __new__(cls, batch: Any, index: int, timestamp: int) -> Self: ...
