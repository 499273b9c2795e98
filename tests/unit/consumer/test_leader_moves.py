"""KIP-951 / KIP-320 on the fake cluster: hints, fenced epochs, truncation, stale hints."""

from __future__ import annotations

import time

import anyio
import pytest

from aiokafka_lead.consumer import LogTruncationError
from aiokafka_lead.metadata import HintOutcome
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster
from tests.support.waiting import eventually
from tests.unit.consumer.util import (
    DEADLINE,
    FETCH,
    OFFSET_FOR_LEADER_EPOCH,
    consume,
    consumer,
    produce,
)

TP = TopicPartition("t", 0)


async def test_hint_sends_next_fetch_to_new_leader_without_metadata() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=1, leaders=[1])
            produce(fc, TP, [b"a", b"b"])
            async with consumer(fc, fetch_max_wait_ms=5000) as c:
                c.assign([TP])
                assert [r.value for r in await consume(c, 2)] == [b"a", b"b"]
                store = c._core.store
                # From now on Metadata answers the old leader: only the hint can name node 2.
                fc.lag_metadata([1, 2, 3])
                moved_at = fc.now()
                fc.move_leader(TP, 2, hint="current")
                produce(fc, TP, [b"c"])
                records = await consume(c, 1)
                arrived = fc.now()
                assert [(r.offset, r.value, r.leader_epoch) for r in records] == [(2, b"c", 1)]
                assert store.leader_for(TP) is not None and store.leader_for(TP).node_id == 2  # type: ignore[union-attr]
                assert store.leader_epoch(TP) == 1
                assert store.hint_outcomes[HintOutcome.APPLIED] == 1
                to_new = fc.requests.select(FETCH, node_id=2, since=moved_at)
                assert to_new, "no fetch reached the new leader"
                # the old leader's long poll returned at the move; the new leader was asked at once
                assert to_new[0].time - moved_at < 1.0
                # KIP-320: the position was validated on the new leader, once
                assert fc.count(OFFSET_FOR_LEADER_EPOCH, node_id=2, since=moved_at) == 1
                # Metadata kept naming node 1 at epoch 0 (lagging): node 2 came from the hint only
                assert store.stale_metadata_ignored + store.hint_outcomes[HintOutcome.APPLIED] >= 1
                took_ms = (arrived - moved_at) * 1e3
                print(f"fake: leader move -> first record from the new leader in {took_ms:.1f} ms")


async def test_fenced_leader_epoch_with_hint_continues_on_the_same_node() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=1, leaders=[1])
            produce(fc, TP, [b"a"])
            async with consumer(fc, fetch_max_wait_ms=5000) as c:
                c.assign([TP])
                await consume(c, 1)
                fc.lag_metadata([1, 2, 3])
                since = fc.now()
                fc.move_leader(TP, 1, hint="current")  # re-elected: same node, next epoch
                produce(fc, TP, [b"b"])
                records = await consume(c, 1)
                assert [(r.offset, r.leader_epoch) for r in records] == [(1, 1)]
                fenced = [
                    r
                    for r in fc.requests.select(FETCH, node_id=1, since=since)
                    if r.request.topics[0].partitions[0].current_leader_epoch == 0
                ]
                assert fenced, "the fetch with the old epoch was not sent"
                assert c._core.store.leader_epoch(TP) == 1
                assert c._core.store.hint_outcomes[HintOutcome.APPLIED] == 1


@pytest.mark.parametrize("reset", ["earliest", "latest"])
async def test_truncation_after_leader_change_resumes_at_divergence(reset: str) -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=1, leaders=[1])
            for v in (b"0", b"1", b"2", b"3", b"4"):
                produce(fc, TP, [v])
            async with consumer(fc, auto_offset_reset=reset) as c:
                c.assign([TP])
                c.seek(TP, 0)
                assert len(await consume(c, 5)) == 5
                fc.move_leader(TP, 2)
                fc.truncate(TP, 3)  # the new leader never had offsets 3 and 4
                produce(fc, TP, [b"new3", b"new4", b"new5"])
                records = await consume(c, 3)
                assert [(r.offset, r.value) for r in records] == [(3, b"new3"), (4, b"new4"), (5, b"new5")]
                assert c.positions.truncations == [(TP, 3, 5)]


async def test_truncation_with_reset_none_raises_naming_lost_offsets() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=1, leaders=[1])
            for v in (b"0", b"1", b"2", b"3", b"4"):
                produce(fc, TP, [v])
            async with consumer(fc, auto_offset_reset="none") as c:
                c.assign([TP])
                c.seek(TP, 0)
                await consume(c, 5)
                fc.move_leader(TP, 2)
                fc.truncate(TP, 3)
                with pytest.raises(LogTruncationError) as info:
                    await consume(c, 1)
                assert info.value.lost == {TP: (3, 5)}
                assert "offsets 3..4 lost" in str(info.value)
                assert info.value.divergent_offsets == {TP: 3}
                # the user decides: seek to the divergence point and carry on
                c.seek(TP, 3)
                produce(fc, TP, [b"again"])
                assert [(r.offset, r.value) for r in await consume(c, 1)] == [(3, b"again")]


async def test_diverging_epoch_in_fetch_response_is_handled() -> None:
    """Truncation on the same leader and epoch: only Fetch v12+ DivergingEpoch tells."""
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            for v in (b"0", b"1", b"2", b"3", b"4"):
                produce(fc, TP, [v])
            async with consumer(fc) as c:
                c.assign([TP])
                c.seek(TP, 0)
                await consume(c, 5)
                fc.truncate(TP, 3)
                await eventually(lambda: bool(c.positions.truncations))
                produce(fc, TP, [b"x"])
                assert [(r.offset, r.value) for r in await consume(c, 1)] == [(3, b"x")]
                assert c.positions.truncations == [(TP, 3, 5)]
                assert fc.count(OFFSET_FOR_LEADER_EPOCH) == 0


async def test_stale_hint_changes_nothing_and_backs_off() -> None:
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=3) as fc:
            fc.create_topic("t", partitions=1, leaders=[1])
            produce(fc, TP, [b"a"])
            async with consumer(fc, retry_backoff_ms=20, retry_backoff_max_ms=1000) as c:
                c.assign([TP])
                await consume(c, 1)
                store = c._core.store
                fc.lag_metadata([1, 2, 3])  # nobody tells the client the truth
                fc.move_leader(TP, 2, hint="same_epoch")
                t0 = fc.now()
                await fc.wait_for(lambda: fc.count(FETCH, node_id=1, since=t0) >= 6)
                elapsed = fc.now() - t0
                # backoffs of 20, 40, 80, 160, 320 ms (x0.8 jitter at worst) between 6 fetches
                assert elapsed > 0.8 * (20 + 40 + 80 + 160 + 320) / 1000
                assert store.leader_for(TP).node_id == 1  # type: ignore[union-attr]
                assert store.leader_epoch(TP) == 0
                assert store.hint_outcomes[HintOutcome.APPLIED] == 0
                assert store.hint_outcomes[HintOutcome.STALE_EPOCH] >= 5
                # the truth arrives by Metadata: the consumer follows it
                fc.unlag_metadata()
                produce(fc, TP, [b"b"])
                assert [r.value for r in await consume(c, 1)] == [b"b"]
                assert time.monotonic() > t0
