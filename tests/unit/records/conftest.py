"""Every record test runs twice: with the C decoder (``_speedups``) and with the pure-Python one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aiokafka_lead.records import native


@pytest.fixture(autouse=True, params=["c", "python"])
def record_decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "c":
        assert native.decode_records is not None, (
            f"the C extension is not in use ({native.unavailable_reason}); "
            "`make test` builds it (pip install -e . with a C compiler)"
        )
    else:
        monkeypatch.setattr(native, "decode_records", None)
    yield request.param
