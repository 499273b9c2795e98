"""The soak's ledger: records in memory maps of fixed capacity."""

from __future__ import annotations

import mmap

import pytest

from aiokafka_lead.bench.soak_load import AckedOffsets, Ledger, MappedArray, Series


def test_mapped_array_appends_and_counts_resident_pages() -> None:
    values = MappedArray("d", capacity=10_000)
    assert len(values) == 0 and list(values) == [] and values.nbytes() == 0
    for i in range(1000):
        values.append(i / 2)
    assert len(values) == 1000
    assert list(values) == [i / 2 for i in range(1000)]
    assert values.nbytes() == -(-8000 // mmap.PAGESIZE) * mmap.PAGESIZE


def test_mapped_array_refuses_more_than_its_capacity() -> None:
    values = MappedArray("q", capacity=3)
    for i in range(3):
        values.append(i)
    with pytest.raises(OverflowError, match="holds 3 entries"):
        values.append(3)
    assert list(values) == [0, 1, 2]


def test_acked_offsets_counts_each_sequence_once_offset_zero_included() -> None:
    acked = AckedOffsets()
    acked[0] = 0  # offset 0 is an acknowledgement like any other
    acked[5] = 17
    acked[5] = 18  # acknowledged again (a retry): still one record
    acked[2] = 4
    assert len(acked) == 3
    assert list(acked) == [0, 2, 5]


def test_ledger_nbytes_covers_its_records() -> None:
    ledger = Ledger()
    series = Series()
    for i in range(600):
        series.append((float(i), 1.0))
        ledger.produce_ms.append((float(i), 2.0))
        ledger.acked[1][i] = i
    assert len(series) == 600 and list(series)[-1] == (599.0, 1.0)
    assert ledger.nbytes() >= 600 * 16 + 600 * 8
    assert ledger.nbytes() % mmap.PAGESIZE == 0
