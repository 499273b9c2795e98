"""One client operation per API, run through a broker's lie (``action``) and then healthy.

Each scenario installs ``action`` for one answer of its API at the moment that API is used
(``times=1``), or for every answer (``times=None``: a broker that always lies, dropped once
the operation through it ended or, for reading, once the client warned), and returns a
:class:`Report` with the error of the operation through the lie; it raises if the healthy
operation afterwards fails or anything but a KafkaError escapes.
"""

from __future__ import annotations

from typing import Any

import anyio

from aiokafka_lead.errors import KafkaError
from aiokafka_lead.protocol.messages import (
    ApiVersionsResponse,
    FetchResponse,
    FindCoordinatorResponse,
    InitProducerIdResponse,
    ListOffsetsResponse,
    MetadataResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    OffsetForLeaderEpochResponse,
    ProduceResponse,
)
from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.intercept import Interceptor
from tests.unit.hostile.harness import (
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

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 2, 3, 8, 9
FIND_COORDINATOR, API_VERSIONS, INIT_PRODUCER_ID, OFFSET_FOR_LEADER_EPOCH = 10, 18, 22, 23
Times = int | None


async def _producer_from_start(fc: FakeCluster, report: Report, lie: Interceptor, **kwargs: Any) -> None:
    """Start a producer and send through the lie; then send healthy (a new producer if the
    lie made the start fail)."""
    p = producer(fc, **kwargs)
    try:
        await p.start()
    except KafkaError as exc:
        report.error = exc
        lie.remove()
        await p.stop()
        p = producer(fc, **kwargs)
        await p.start()
    else:
        await through(p.send_and_wait("t", b"lied"), report)
    lie.remove()
    try:
        await p.send_and_wait("t", b"healthy")
    finally:
        await p.stop()


async def metadata(action: Any, times: Times = 1) -> Report:
    """The first Metadata answer about the topic lies (before it, the bootstrap answer)."""
    report = Report()
    async with hostile_case() as fc:
        lie = fc.intercept(
            METADATA, lambda node, header, request: action if request.topics else None, times=times
        )
        await _producer_from_start(fc, report, lie)
    return report


async def api_versions(action: Any, times: Times = 1) -> Report:
    """The first connection's handshake lies."""
    report = Report()
    async with hostile_case() as fc:
        await _producer_from_start(fc, report, fc.intercept(API_VERSIONS, lambda *_: action, times=times))
    return report


async def init_producer_id(action: Any, times: Times = 1) -> Report:
    """The idempotent producer's id comes from a lying answer."""
    report = Report()
    async with hostile_case() as fc:
        await _producer_from_start(fc, report, fc.intercept(INIT_PRODUCER_ID, lambda *_: action, times=times))
    return report


async def produce(action: Any, times: Times = 1) -> Report:
    """One Produce answer lies."""
    report = Report()
    async with hostile_case() as fc, producer(fc) as p:
        await p.partitions_for("t")
        lie = fc.intercept(PRODUCE, lambda *_: action, times=times)
        await through(p.send_and_wait("t", b"lied"), report)
        lie.remove()
        await p.send_and_wait("t", b"healthy")
    return report


async def _consume_through(fc: FakeCluster, report: Report, lie: Interceptor, **kwargs: Any) -> None:
    """Read up to the end of the log through the lie (an error is recorded and reading goes
    on; a lie about offsets may make the client skip records, which it cannot know), then a
    new, healthy record must arrive, alone. A broker that always lies is watched for
    until the reader reports it (an error, or a WARNING), then tells the truth."""
    async with consumer(fc, **kwargs) as c:
        c.assign([TP])
        if lie.remaining is None:

            async def through_the_lie() -> None:
                while report.error is None:
                    await through(c.position(TP, timeout_ms=100), report)
                    await through(c.getmany(timeout_ms=100), report)

            with warning_seen() as warned:
                await until_reported(warned, through_the_lie)
        lie.remove()
        errors = 0
        while True:
            position = await through(c.position(TP, timeout_ms=100), report)
            if position is not None and 3 <= position <= fc.high_watermark(("t", 0)):
                break  # at the end of the log (a lie may have sent it past the end first)
            if await through(c.getmany(timeout_ms=100), report) is None:
                errors += 1
                if errors == 3:
                    await c.seek_to_beginning(TP)  # the user's way past a bad batch
        append(fc, [b"d"])
        assert await read(c, 1) == [b"d"]


async def fetch(action: Any, times: Times = 1) -> Report:
    """The first Fetch answer with records lies."""
    report = Report()
    async with hostile_case() as fc:
        append(fc, [b"a", b"b", b"c"])
        lie = fc.intercept(FETCH, lambda node, header, request: action, times=times)
        await _consume_through(fc, report, lie)
    return report


async def list_offsets(action: Any, times: Times = 1) -> Report:
    """The position reset's ListOffsets answer lies."""
    report = Report()
    async with hostile_case() as fc:
        append(fc, [b"a", b"b", b"c"])
        lie = fc.intercept(LIST_OFFSETS, lambda *_: action, times=times)
        await _consume_through(fc, report, lie)
    return report


async def find_coordinator(action: Any, times: Times = 1) -> Report:
    """The group's FindCoordinator answer lies (committed offsets are looked up first)."""
    report = Report()
    async with hostile_case() as fc:
        append(fc, [b"a", b"b", b"c"])
        lie = fc.intercept(FIND_COORDINATOR, lambda *_: action, times=times)
        await _consume_through(fc, report, lie, group_id="g")
    return report


async def offset_fetch(action: Any, times: Times = 1) -> Report:
    """The committed-offset look-up lies."""
    report = Report()
    async with hostile_case() as fc:
        append(fc, [b"a", b"b", b"c"])
        lie = fc.intercept(OFFSET_FETCH, lambda *_: action, times=times)
        await _consume_through(fc, report, lie, group_id="g")
    return report


async def offset_commit(action: Any, times: Times = 1) -> Report:
    """A commit's answer lies; the next commit is healthy."""
    report = Report()
    async with hostile_case() as fc:
        append(fc, [b"a", b"b", b"c"])
        async with consumer(fc, group_id="g") as c:
            c.assign([TP])
            await read(c, 3)
            lie = fc.intercept(OFFSET_COMMIT, lambda *_: action, times=times)
            await through(c.commit(), report)
            lie.remove()
            await c.commit()
            assert await c.committed(TP) == 3
    return report


async def offset_for_leader_epoch(action: Any, times: Times = 1) -> Report:
    """The position check after a leader move lies."""
    report = Report()
    async with hostile_case(brokers=2) as fc:
        append(fc, [b"a", b"b", b"c"])
        async with consumer(fc) as c:
            c.assign([TP])
            await read(c, 3)
            lie = fc.intercept(OFFSET_FOR_LEADER_EPOCH, lambda *_: action, times=times)
            fc.move_leader(("t", 0), 2 if fc.leader(("t", 0)) == 1 else 1)
            append(fc, [b"d"])
            values: list[bytes] | None = None

            async def through_the_lie() -> None:
                nonlocal values
                values = await through(read(c, 1), report)

            with warning_seen() as warned:
                await until_reported(warned if times is None else anyio.Event(), through_the_lie)
            lie.remove()
            if values is None:  # a reported error (or still failing): reading goes on
                await read(c, 1)
            append(fc, [b"e"])
            await read(c, 1)
    return report


#: per API: its scenario, the response class and version the client negotiates with the fake
APIS: dict[str, tuple[Any, type[Any], int]] = {
    "Metadata": (metadata, MetadataResponse, 13),
    "ApiVersions": (api_versions, ApiVersionsResponse, 4),
    "InitProducerId": (init_producer_id, InitProducerIdResponse, 5),
    "Produce": (produce, ProduceResponse, 12),
    "Fetch": (fetch, FetchResponse, 17),
    "ListOffsets": (list_offsets, ListOffsetsResponse, 10),
    "FindCoordinator": (find_coordinator, FindCoordinatorResponse, 6),
    "OffsetFetch": (offset_fetch, OffsetFetchResponse, 9),
    "OffsetCommit": (offset_commit, OffsetCommitResponse, 9),
    "OffsetForLeaderEpoch": (offset_for_leader_epoch, OffsetForLeaderEpochResponse, 4),
}

__all__ = ["APIS", "anyio"]
