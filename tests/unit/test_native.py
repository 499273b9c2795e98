"""The C decoder and ConsumerRecord builder against their pure-Python twins, input for input."""

from __future__ import annotations

import random
from typing import Any

import pytest

from aiokafka_lead.errors import CorruptRecordError, DecodeError
from aiokafka_lead.records import (
    CompressionType,
    MemoryRecords,
    Record,
    RecordBatchBuilder,
    TimestampType,
    native,
)
from aiokafka_lead.records.batch import _decode_records
from aiokafka_lead.structs import ConsumerRecord


def _batch(n: int, *, log_append: bool = False, codec: int = CompressionType.NONE) -> bytes:
    ts_type = TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME
    builder = RecordBatchBuilder(codec, batch_size=1 << 20, timestamp_type=ts_type, base_offset=1 << 40)
    for i in range(n):
        headers = [(f"k{j}", b"v" * j if j % 2 else None) for j in range(i % 4)]
        builder.append(
            (1 << 41) + i * 997,
            None if i % 5 == 0 else b"key-%d" % i,
            None if i % 7 == 3 else bytes(range(i % 200)) * 3,
            headers,
        )
    return builder.build(5, 1, 0)


def _decode_both(data: bytes) -> tuple[Any, Any]:
    """Outcome of decoding every batch in ``data``: the records, or the error class."""
    outcomes = []
    for impl in (native.decode_records, None):
        saved = native.decode_records
        native.decode_records = impl
        try:
            outcomes.append([b.records() for b in MemoryRecords(data, topic="t", partition=0)])
        except (DecodeError, CorruptRecordError) as exc:
            outcomes.append(type(exc))
        finally:
            native.decode_records = saved
    return outcomes[0], outcomes[1]


def test_the_extension_is_built() -> None:
    # `make test` installs with a compiler; losing the extension silently would halve the consumer
    assert native.decode_records is not None, native.unavailable_reason
    assert native.build_consumer_records is not None
    assert native.RecordsBuffer is not None and native.murmur2 is not None and native.now_ms is not None


@pytest.mark.parametrize("log_append", [False, True])
def test_same_records_as_python(log_append: bool) -> None:
    data = _batch(300, log_append=log_append)
    c, py = _decode_both(data)
    assert isinstance(c, list) and c == py
    records = c[0]
    assert all(type(r) is Record for r in records)
    assert records[1].offset == (1 << 40) + 1
    assert records[0].key is None and records[1].key == b"key-1"
    assert records[3].value is None
    assert records[3].headers == (("k0", None), ("k1", b"v"), ("k2", None))
    assert records[0].headers == ()
    if log_append:
        assert len({r.timestamp for r in records}) == 1
    else:
        assert records[2].timestamp == (1 << 41) + 2 * 997


def test_same_outcome_on_bit_flips_and_truncations() -> None:
    rng = random.Random(951)
    data = bytearray(_batch(40))
    for _ in range(3000):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(61, len(mutated))] = rng.randrange(256)  # past the header
        cut = len(mutated) if rng.random() < 0.7 else rng.randrange(61, len(mutated))
        sample = bytes(mutated[:cut])
        c, py = _decode_both(sample)
        # the same records, or an error from both (messages may differ)
        assert (c == py) if isinstance(c, list) else not isinstance(py, list), sample.hex()


def test_oversized_varlong_is_an_error_both_ways() -> None:
    # timestampDelta as 10 bytes whose last byte carries more than bit 63
    body = bytes([0x00]) + b"\xff" * 9 + b"\x7f" + bytes([0x00, 0x01, 0x01, 0x00])
    record = bytes([len(body) << 1]) + body
    for impl in (native.decode_records, _decode_records):
        assert impl is not None
        with pytest.raises(DecodeError):
            impl(record, 0, len(record), 1, 0, 0, None)


def test_consumer_records_match_the_dataclass() -> None:
    assert native.build_consumer_records is not None
    rows = MemoryRecords(_batch(50)).__iter__().__next__().records()
    built = native.build_consumer_records(rows, "orders", 3, 1, 7)
    expected = [
        ConsumerRecord(
            "orders",
            3,
            r.offset,
            r.timestamp,
            1,
            r.key,
            r.value,
            None,
            -1 if r.key is None else len(r.key),
            -1 if r.value is None else len(r.value),
            r.headers,
            7,
        )
        for r in rows
    ]
    assert built == expected
    first = built[3]
    assert type(first) is ConsumerRecord
    assert first.headers == (("k0", None), ("k1", b"v"), ("k2", None))  # a tuple, as in aiokafka 0.14
    assert first.headers is rows[3].headers  # immutable, so shared with the decoded record
    assert built[0].headers == ()
    first.value = b"changed"  # still a mutable dataclass, as in aiokafka
    assert first.value == b"changed"


def test_consumer_record_builder_rejects_foreign_rows() -> None:
    assert native.build_consumer_records is not None
    with pytest.raises(TypeError):
        native.build_consumer_records([(1, 2)], "t", 0, 0, 0)  # type: ignore[list-item]


def test_a_stale_build_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """An extension built from an older _speedups.c (another configure(), fewer checks) is
    refused with a reason; the pure-Python loops run instead."""
    import sys
    import types

    import aiokafka_lead

    stale = types.ModuleType("aiokafka_lead._speedups")  # no ABI: the first version
    monkeypatch.setitem(sys.modules, "aiokafka_lead._speedups", stale)
    monkeypatch.setattr(aiokafka_lead, "_speedups", stale, raising=False)
    names = ("decode_records", "build_consumer_records", "RecordsBuffer", "murmur2", "now_ms")
    names += ("record_columns", "encode_produce", "decode_produce_written")
    for name in (*names, "unavailable_reason"):
        monkeypatch.setattr(native, name, None)
    native._load()
    assert all(getattr(native, name) is None for name in names)
    assert native.unavailable_reason is not None and "stale build" in native.unavailable_reason
