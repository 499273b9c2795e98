from typing import Any

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
