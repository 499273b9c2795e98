"""Scenarios for the group and transaction APIs (see ``scenarios.py`` for the contract).

Each installs its ``action`` on the answers of one API (``times=1`` for a single lie,
``None`` for a broker that lies on every answer), runs the operation that sends it, records
the operation's ``KafkaError`` in the report, then removes the lie and checks that healthy
work succeeds: the same client where it is still running, a new one otherwise.
"""

from __future__ import annotations

from typing import Any

import anyio

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.structs import OffsetAndMetadata
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.hostile.harness import (
    DEADLINE_S,
    TP,
    Report,
    append,
    consumer,
    hostile_case,
    producer,
    read,
    through,
    until_reported,
    warning_seen,
)

FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 10, 11, 12, 13, 14
INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN = 22, 24, 25, 26
TXN_OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT = 28, 68

Times = int | None


def member(fc: FakeCluster, **kwargs: Any) -> AIOKafkaConsumer[bytes, bytes]:
    kwargs.setdefault("group_id", "g")
    if kwargs.get("group_protocol", "classic") == "classic":  # KIP-848: the broker sets them
        kwargs.setdefault("heartbeat_interval_ms", 100)
        kwargs.setdefault("session_timeout_ms", 6000)
        kwargs.setdefault("rebalance_timeout_ms", 500)  # a JoinGroup waits this long for an answer
    return consumer(fc, **kwargs)


async def _read_through(
    c: AIOKafkaConsumer[bytes, bytes], report: Report, count: int, *, until_error: bool = False
) -> list[bytes]:
    """``count`` values, errors of getmany() recorded (reading goes on after one, unless
    ``until_error``)."""
    out: list[bytes] = []
    while len(out) < count and not (until_error and report.error is not None):
        batch = await through(c.getmany(timeout_ms=100), report)
        for records in (batch or {}).values():
            out.extend(r.value for r in records if r.value is not None)
    return out


async def _group_member_through(
    fc: FakeCluster, api: int, action: Any, times: Times, report: Report, **kwargs: Any
) -> None:
    """A member subscribes and reads ``a b c`` through the lie (start() may fail: a new
    member then joins healthy); after the lie, a new record arrives.

    A JoinGroup lie is told in the answer that completes the join (the one to a request
    naming the member id): a lost MEMBER_ID_REQUIRED answer leaves a pending member the
    broker waits for until its session times out, as Kafka does."""
    append(fc, [b"a", b"b", b"c"])

    def when(node: int, header: Any, request: Any) -> Any:
        return action if api != JOIN_GROUP or request.member_id else None

    lie = fc.intercept(api, when, times=times)
    c = member(fc, **kwargs)
    c.subscribe(["t"])
    if times is None:
        # a broker that lies on every answer: the member reports it or keeps retrying, as
        # aiokafka's and Java's do, warning the operator (the test checks the log)
        async def through_the_lie() -> None:
            try:
                await c.start()
                await _read_through(c, report, 3, until_error=True)
            except KafkaError as exc:
                report.error = exc

        with warning_seen() as warned:
            await until_reported(warned, through_the_lie)
        lie.remove()
        await c.stop()
        async with member(fc, **{**kwargs, "group_id": "g-after"}) as again:
            again.subscribe(["t"])
            assert (await read(again, 3)) == [b"a", b"b", b"c"]
        return
    try:
        try:
            await c.start()
        except KafkaError as exc:
            report.error = exc
            lie.remove()
            await c.stop()
            # a member that failed to join may stay in the group until its session times
            # out (Java's does not leave either): the new one joins another group
            c = member(fc, **{**kwargs, "group_id": "g-after"})
            c.subscribe(["t"])
            await c.start()
        if times is None:
            # a broker that lies on every answer: the member reports it (or needs no such
            # answer to read); healthy once it stops
            await _read_through(c, report, 3)
            lie.remove()
        else:
            await _read_through(c, report, 3)
        append(fc, [b"d"])
        assert await _read_through(c, Report(), 1) == [b"d"]
    finally:
        await c.stop()


async def join_group(action: Any, times: Times = 1) -> Report:
    """A classic member's JoinGroup answer lies."""
    report = Report()
    async with hostile_case() as fc:
        await _group_member_through(fc, JOIN_GROUP, action, times, report)
    return report


async def sync_group(action: Any, times: Times = 1) -> Report:
    """A classic member's SyncGroup answer (its assignment) lies."""
    report = Report()
    async with hostile_case() as fc:
        await _group_member_through(fc, SYNC_GROUP, action, times, report)
    return report


async def heartbeat(action: Any, times: Times = 1) -> Report:
    """A joined member's heartbeat answer lies; reading goes on (a rejoin at most)."""
    report = Report()
    async with hostile_case() as fc:
        append(fc, [b"a", b"b", b"c"])
        async with member(fc) as c:
            c.subscribe(["t"])
            await read(c, 3)
            lie = fc.intercept(HEARTBEAT, lambda *_: action, times=times)
            sent = len(fc.requests.select(api_key=HEARTBEAT))
            if times is None:  # until enough failed heartbeats in a row were reported
                with warning_seen() as warned:
                    await until_reported(warned, anyio.Event().wait)
            else:
                await fc.wait_for(lambda: len(fc.requests.select(api_key=HEARTBEAT)) >= sent + 3)
            append(fc, [b"d"])
            await _read_through(c, report, 1)
            lie.remove()
            append(fc, [b"e"])
            assert await _read_through(c, Report(), 1) == [b"e"]
    return report


async def leave_group(action: Any, times: Times = 1) -> Report:
    """The LeaveGroup answer at stop() lies: stop() still ends; a new consumer reads."""
    report = Report()
    async with hostile_case() as fc:
        append(fc, [b"a", b"b", b"c"])
        c = member(fc)
        c.subscribe(["t"])
        await c.start()
        try:
            await read(c, 3)
            await c.commit()
            lie = fc.intercept(LEAVE_GROUP, lambda *_: action, times=times)
        finally:
            await through(c.stop(), report)
        lie.remove()
        append(fc, [b"d"])
        # a member whose leave went unanswered stays in the group until its session times
        # out: the new one joins another group
        async with member(fc, group_id="g-after") as again:
            again.subscribe(["t"])
            assert (await read(again, 4))[-1] == b"d"
    return report


async def consumer_group_heartbeat(action: Any, times: Times = 1) -> Report:
    """A KIP-848 member's heartbeat answers lie (the first is its join)."""
    report = Report()
    async with hostile_case() as fc:
        await _group_member_through(
            fc, CONSUMER_GROUP_HEARTBEAT, action, times, report, group_protocol="consumer"
        )
    return report


def txn_producer(fc: FakeCluster, **kwargs: Any) -> AIOKafkaProducer:
    return producer(fc, transactional_id="tx", **kwargs)


async def _transactions(
    fc: FakeCluster, api: int, action: Any, times: Times, report: Report, *, offsets: bool = False
) -> None:
    """A transactional producer starts and commits a transaction through the lie (with
    consumed offsets when ``offsets``); after the lie a transaction commits (the same
    producer unless the lie left it unusable: fenced, fatal, or failed to start)."""
    lie = fc.intercept(api, lambda *_: action, times=times)
    p = txn_producer(fc)

    async def one_transaction(value: bytes) -> None:
        await p.begin_transaction()
        await p.send_and_wait("t", value)
        if offsets:
            await p.send_offsets_to_transaction({TP: OffsetAndMetadata(1, "")}, "g")
        await p.commit_transaction()

    try:
        try:
            await p.start()
        except KafkaError as exc:
            report.error = exc
        else:
            if await through(one_transaction(b"lied"), report) is None and report.error is not None:
                await through(p.abort_transaction(), Report())
        lie.remove()
        try:
            await one_transaction(b"healthy")
        except KafkaError:
            if report.error is None:
                raise
            await p.stop()  # the lie left this producer unusable: it said so; a new one works
            p = txn_producer(fc)
            await p.start()
            await one_transaction(b"healthy")
    finally:
        await p.stop()


def _txn_scenario(api: int, *, version: int = 2, offsets: bool = False) -> Any:
    async def scenario(action: Any, times: Times = 1) -> Report:
        report = Report()
        async with hostile_case() as fc:
            fc.txns.transaction_version = version
            await _transactions(fc, api, action, times, report, offsets=offsets)
        return report

    return scenario


#: the transaction coordinator's FindCoordinator (key type 1) and InitProducerId at start()
txn_find_coordinator = _txn_scenario(FIND_COORDINATOR)
txn_init_producer_id = _txn_scenario(INIT_PRODUCER_ID)
#: TV1 adds partitions and the group explicitly (TV2 adds them with Produce and TxnOffsetCommit)
add_partitions_to_txn = _txn_scenario(ADD_PARTITIONS_TO_TXN, version=1)
add_offsets_to_txn = _txn_scenario(ADD_OFFSETS_TO_TXN, version=1, offsets=True)
txn_offset_commit = _txn_scenario(TXN_OFFSET_COMMIT, offsets=True)
end_txn = _txn_scenario(END_TXN)
#: under TV1, EndTxn answers at v4 (no epoch in the answer)
end_txn_v1 = _txn_scenario(END_TXN, version=1)

__all__ = ["DEADLINE_S"]
