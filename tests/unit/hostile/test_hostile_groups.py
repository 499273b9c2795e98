"""The hostile-broker suite for the group and transaction APIs: every field of the answer
lied about once (values generated from the schema) and every wire fault, under the rules of
``harness.py``."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from aiokafka_lead.protocol.messages import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    ConsumerGroupHeartbeatResponse,
    EndTxnResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    InitProducerIdResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
    TxnOffsetCommitResponse,
)
from tests.support.lies import cases, lie
from tests.support.script_server import WIRE_FAULTS, wire_fault
from tests.unit.hostile import scenarios_groups as s
from tests.unit.hostile.harness import check_error

#: per API: its scenario, the response class and the version the client reads from the fake
GROUP_APIS: dict[str, tuple[Any, type[Any], int]] = {
    "JoinGroup": (s.join_group, JoinGroupResponse, 9),
    "SyncGroup": (s.sync_group, SyncGroupResponse, 5),
    "Heartbeat": (s.heartbeat, HeartbeatResponse, 4),
    "LeaveGroup": (s.leave_group, LeaveGroupResponse, 5),
    "ConsumerGroupHeartbeat": (s.consumer_group_heartbeat, ConsumerGroupHeartbeatResponse, 1),
    "FindCoordinator(txn)": (s.txn_find_coordinator, FindCoordinatorResponse, 6),
    "InitProducerId(txn)": (s.txn_init_producer_id, InitProducerIdResponse, 5),
    "AddPartitionsToTxn": (s.add_partitions_to_txn, AddPartitionsToTxnResponse, 3),
    "AddOffsetsToTxn": (s.add_offsets_to_txn, AddOffsetsToTxnResponse, 4),
    "TxnOffsetCommit": (s.txn_offset_commit, TxnOffsetCommitResponse, 5),
    "EndTxn": (s.end_txn, EndTxnResponse, 5),
}

FIELD_CASES = [
    pytest.param(api, path, value, id=f"{api}-{case_id}")
    for api, (_, cls, version) in GROUP_APIS.items()
    for case_id, path, value in cases(cls, version)
]
WIRE_CASES = [pytest.param(api, fault, id=f"{api}-{fault}") for api in GROUP_APIS for fault in WIRE_FAULTS]
COUNTS = Counter(param.values[0] for param in FIELD_CASES + WIRE_CASES)


@pytest.mark.parametrize(("api", "path", "value"), FIELD_CASES)
async def test_a_lie_in_a_field(api: str, path: tuple[str, ...], value: Any) -> None:
    applied: list[int] = []
    report = await GROUP_APIS[api][0](lie(path, value, applied))
    check_error(report.error, named=True)
    assert applied, "the lie was never told (the scenario does not send this API)"


@pytest.mark.parametrize(("api", "fault"), WIRE_CASES)
async def test_a_fault_on_the_wire(api: str, fault: str) -> None:
    report = await GROUP_APIS[api][0](wire_fault(fault))
    check_error(report.error, named=True)


def test_every_api_has_cases() -> None:
    assert set(COUNTS) == set(GROUP_APIS)
    assert all(n >= len(WIRE_FAULTS) + 3 for n in COUNTS.values()), COUNTS
