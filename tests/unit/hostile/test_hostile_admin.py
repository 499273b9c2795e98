"""The hostile-broker suite for the admin APIs, on the scripted admin broker: every field of
the answer lied about once (values generated from the schema) and every wire fault, under
``harness.py``'s rules. Errors name the API; a bad answer (``KafkaProtocolError``) also the
broker; an operation that ran out of time (``KafkaTimeoutError``) names the operation."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.errors import KafkaProtocolError, KafkaTimeoutError
from aiokafka_lead.protocol.generated import REQUEST_CLASSES
from aiokafka_lead.protocol.versions import CLIENT_VERSIONS
from tests.support.lies import EVERY, cases, lie
from tests.support.script_server import WIRE_FAULTS, wire_fault
from tests.unit.hostile.harness import BROKER, check_error
from tests.unit.hostile.scenarios_admin import ADMIN_SCENARIOS


def _response(api_key: int) -> tuple[type[Any], int]:
    """The response class and the version the client reads it at (the newest it speaks)."""
    return REQUEST_CLASSES[api_key].RESPONSE_CLASS, CLIENT_VERSIONS[api_key][1]


FIELD_CASES = [
    pytest.param(api, path, value, id=f"{api}-{case_id}")
    for api, (key, _) in ADMIN_SCENARIOS.items()
    for case_id, path, value in cases(*_response(key))
]
WIRE_CASES = [
    pytest.param(api, fault, id=f"{api}-{fault}") for api in ADMIN_SCENARIOS for fault in WIRE_FAULTS
]
COUNTS = Counter(param.values[0] for param in FIELD_CASES + WIRE_CASES)


@pytest.mark.parametrize(("api", "path", "value"), FIELD_CASES)
async def test_a_lie_in_a_field(api: str, path: tuple[str, ...], value: Any) -> None:
    applied: list[int] = []
    report = await ADMIN_SCENARIOS[api][1](lie(path, value, applied))
    check_admin_error(report.error)
    assert applied, "the lie was never told (the scenario does not send this API)"


@pytest.mark.parametrize(("api", "fault"), WIRE_CASES)
async def test_a_fault_on_the_wire(api: str, fault: str) -> None:
    report = await ADMIN_SCENARIOS[api][1](wire_fault(fault))
    check_admin_error(report.error)


def check_admin_error(error: BaseException | None) -> None:
    """Every error names the broker (or, for an operation that got no answer, the broker it
    waited on) and the API; an operation that ran out of time names the operation instead."""
    timed_out = isinstance(error, KafkaTimeoutError)
    check_error(error, named=not timed_out)
    if timed_out:
        assert BROKER.search(str(error)), f"the error does not name the broker: {error!r}"


def test_every_api_has_cases() -> None:
    assert set(COUNTS) == set(ADMIN_SCENARIOS)
    assert all(n >= len(WIRE_FAULTS) + 3 for n in COUNTS.values()), COUNTS


@pytest.mark.parametrize("api", ["DeleteGroups", "DeleteGroups(share)"])
async def test_a_deletion_answered_for_another_group_is_an_error(api: str) -> None:
    applied: list[int] = []
    report = await ADMIN_SCENARIOS[api][1](lie(("results", EVERY, "group_id"), "another", applied))
    assert applied == [1]
    assert isinstance(report.error, KafkaProtocolError), report.error
    assert "DeleteGroups" in str(report.error)


@pytest.mark.parametrize("api", ["AlterConfigs", "IncrementalAlterConfigs"])
async def test_an_alteration_answered_without_the_resource_is_an_error(api: str) -> None:
    applied: list[int] = []
    report = await ADMIN_SCENARIOS[api][1](lie(("responses",), [], applied))
    assert applied == [1]
    assert isinstance(report.error, KafkaProtocolError), report.error
    assert api in str(report.error) and BROKER.search(str(report.error)), report.error


@pytest.mark.parametrize(
    ("api", "path", "code"),
    [
        ("CreateTopics", ("topics", EVERY, "error_code"), ErrorCode.TOPIC_ALREADY_EXISTS),
        ("DescribeConfigs", ("results", EVERY, "error_code"), ErrorCode.UNKNOWN_SERVER_ERROR),
        ("DeleteGroups", ("results", EVERY, "error_code"), ErrorCode.GROUP_ID_NOT_FOUND),
    ],
)
async def test_a_per_item_error_names_the_broker(api: str, path: tuple[str, ...], code: int) -> None:
    report = await ADMIN_SCENARIOS[api][1](lie(path, code))
    assert report.error is not None and BROKER.search(str(report.error)), report.error


@pytest.mark.parametrize("api", ["DescribeConfigs", "AlterConfigs", "DescribeCluster", "DeleteGroups"])
async def test_an_operation_without_an_answer_names_the_broker_it_waited_on(api: str) -> None:
    report = await ADMIN_SCENARIOS[api][1](wire_fault("stall"))
    assert isinstance(report.error, KafkaTimeoutError), report.error
    assert BROKER.search(str(report.error)), report.error
