"""A broker that lies on every answer of one API: the client gives up with a clear error
within its deadline (or, for a group member, which retries for ever as aiokafka's and Java's
do, keeps retrying and says so), and warns the operator once, not on every retry."""

from __future__ import annotations

import logging
import re
from collections import Counter
from typing import Any

import pytest

from aiokafka_lead.core import retry
from aiokafka_lead.errors import KafkaProtocolError, KafkaTimeoutError
from aiokafka_lead.ratelog import RateLimitedLog
from aiokafka_lead.testing.fake.intercept import Error
from tests.support.script_server import wire_fault
from tests.unit.hostile.harness import check_error
from tests.unit.hostile.scenarios import APIS
from tests.unit.hostile.scenarios_admin import ADMIN_SCENARIOS
from tests.unit.hostile.test_hostile_groups import GROUP_APIS

COORDINATOR_NOT_AVAILABLE = 15
#: per fault: the action told on every answer
FAULTS: dict[str, Any] = {
    "retriable-error": Error(COORDINATOR_NOT_AVAILABLE),
    "garbage": wire_fault("garbage"),
    "stall": wire_fault("stall"),
}
#: a WARNING repeated more often than this for one problem is not rate-limited
MAX_SAME_WARNING = 1
#: per API: its scenario, and whether its errors must name the broker
SCENARIOS: dict[str, tuple[Any, bool]] = {
    **{api: (scenario, True) for api, (scenario, _, _) in APIS.items()},
    **{api: (scenario, True) for api, (scenario, _, _) in GROUP_APIS.items()},
    # an admin call's item errors (a topic that already exists...) name the API and the item
    **{api: (scenario, False) for api, (_, scenario) in ADMIN_SCENARIOS.items()},
}
CASES = [pytest.param(api, fault, id=f"{api}-{fault}") for api in SCENARIOS for fault in FAULTS]


@pytest.mark.parametrize(("api", "fault"), CASES)
async def test_a_broker_that_lies_on_every_answer(
    api: str, fault: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retry, "_warn", RateLimitedLog(logging.getLogger(retry.__name__)))
    caplog.set_level(logging.WARNING, logger="aiokafka_lead")
    scenario, named_broker = SCENARIOS[api]
    report = await scenario(FAULTS[fault], times=None)
    # a request that never got an answer is known by its operation; its broker may be unknown
    check_error(
        report.error,
        named=not isinstance(report.error, KafkaTimeoutError),
        broker=named_broker or isinstance(report.error, KafkaProtocolError),
    )
    if api == "AlterConfigs" and report.error is None and fault == "retriable-error":
        # aiokafka's alter_configs returns the answers, their error codes included, as they are
        assert [r.error_code for response in report.value for r in response.resources] == [
            COORDINATOR_NOT_AVAILABLE
        ]
        return
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name.startswith("aiokafka")]
    if report.error is None:  # still retrying when the lie ended: it must have said so
        assert warnings, "a broker lying on every answer was never reported (no error, no WARNING)"
    repeats = Counter(re.sub(r"\d+", "N", r.getMessage()) for r in warnings)
    assert max(repeats.values(), default=0) <= MAX_SAME_WARNING, f"not rate-limited: {repeats}"
