"""Every record test runs twice: with the C extension (``_speedups``: the decoder and the
builder's per-record step) and with the pure-Python reference."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aiokafka_lead.records import builder, native
from aiokafka_lead.records.builder import PyRecordBatchBuilder


@pytest.fixture(autouse=True, params=["c", "python"])
def record_decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "c":
        assert native.decode_records is not None, (
            f"the C extension is not in use ({native.unavailable_reason}); "
            "`make test` builds it (pip install -e . with a C compiler)"
        )
        assert builder.RecordBatchBuilder is not PyRecordBatchBuilder
    else:
        monkeypatch.setattr(native, "decode_records", None)
        # the test module's own name and the one build_control_batch uses
        monkeypatch.setattr(builder, "RecordBatchBuilder", PyRecordBatchBuilder)
        if hasattr(request.module, "RecordBatchBuilder"):
            monkeypatch.setattr(request.module, "RecordBatchBuilder", PyRecordBatchBuilder)
    yield request.param
