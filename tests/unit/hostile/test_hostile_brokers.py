"""The hostile-broker suite: for every API the clients read, every field of its answer
lied about (values generated from the schema) and every wire fault, the rules of
``harness.py``: a clear KafkaError or recovery within the deadline, the client usable
afterwards, nothing leaked, the event loop never blocked for a freeze (tests/support/loop_lag.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from aiokafka_lead.errors import KafkaTimeoutError
from tests.support.lies import cases, lie
from tests.support.script_server import WIRE_FAULTS, wire_fault
from tests.unit.hostile.harness import check_error
from tests.unit.hostile.scenarios import APIS

FIELD_CASES = [
    pytest.param(api, path, value, id=f"{api}-{case_id}")
    for api, (_, cls, version) in APIS.items()
    for case_id, path, value in cases(cls, version)
]
WIRE_CASES = [pytest.param(api, fault, id=f"{api}-{fault}") for api in APIS for fault in WIRE_FAULTS]
APPLIED: dict[str, int] = {}
COUNTS = Counter(param.values[0] for param in FIELD_CASES + WIRE_CASES)


@pytest.mark.parametrize(("api", "path", "value"), FIELD_CASES)
async def test_a_lie_in_a_field(api: str, path: tuple[str, ...], value: Any) -> None:
    scenario = APIS[api][0]
    applied: list[int] = []
    report = await scenario(lie(path, value, applied))
    check_error(report.error, named=not isinstance(report.error, KafkaTimeoutError))
    APPLIED[f"{api}:{'.'.join(path)}"] = sum(applied)


@pytest.mark.parametrize(("api", "fault"), WIRE_CASES)
async def test_a_fault_on_the_wire(api: str, fault: str) -> None:
    scenario = APIS[api][0]
    report = await scenario(wire_fault(fault))
    check_error(report.error, named=not isinstance(report.error, KafkaTimeoutError))


def test_every_api_has_cases() -> None:
    assert set(COUNTS) == set(APIS)
    assert all(n >= len(WIRE_FAULTS) + 5 for n in COUNTS.values()), COUNTS
