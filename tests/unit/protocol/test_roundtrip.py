"""Property: decode(encode(x, v), v) == x and re-encoding is byte-identical, for every
generated (message, version) pair."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiokafka_lead.protocol.messages import (
    REQUEST_CLASSES,
    RESPONSE_CLASSES,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    Versioned,
)

from .strategies import struct_strategy

CLASSES: list[type[Versioned]] = [
    *REQUEST_CLASSES.values(),
    *RESPONSE_CLASSES.values(),
    ConsumerProtocolSubscription,
    ConsumerProtocolAssignment,
]
CASES = [(cls, v) for cls in CLASSES for v in range(cls.MIN_VERSION, cls.LATEST_VERSION + 1)]


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
def test_round_trip(cls: type[Versioned], version: int) -> None:
    @settings(
        max_examples=6,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        obj = data.draw(struct_strategy(cls, version))
        encoded = obj.encode(version)
        decoded = cls.decode(encoded, version)
        assert decoded == obj
        assert decoded.encode(version) == encoded

    check()


def test_every_listed_api_is_generated() -> None:
    assert len(REQUEST_CLASSES) == 47 and REQUEST_CLASSES.keys() == RESPONSE_CLASSES.keys()
    assert len(CASES) > 400


def test_request_and_response_ranges_agree() -> None:
    for key, req in REQUEST_CLASSES.items():
        resp = RESPONSE_CLASSES[key]
        assert req.RESPONSE_CLASS is resp
        assert resp.API_KEY == req.API_KEY
        assert (req.MIN_VERSION, req.MAX_VERSION, req.LATEST_VERSION) == (
            resp.MIN_VERSION,
            resp.MAX_VERSION,
            resp.LATEST_VERSION,
        )
