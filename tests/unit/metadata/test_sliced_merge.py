"""A huge Metadata answer is merged in slices (the event loop gets turns), and what other
tasks see between slices is never half a topic; hints applied meanwhile are kept."""

from __future__ import annotations

import uuid

import anyio
import pytest

from aiokafka_lead import slices
from aiokafka_lead.metadata import (
    BrokerNode,
    LeaderHint,
    MetadataSnapshot,
    MetadataStore,
    PartitionMetadata,
    TopicMetadata,
)
from aiokafka_lead.structs import TopicPartition

PARTITIONS = 5_000
NODES = (BrokerNode(1, "h1", 9092), BrokerNode(2, "h2", 9092))


def snapshot(epoch: int, partitions: int = PARTITIONS, leader: int = 1) -> MetadataSnapshot:
    parts = tuple(PartitionMetadata("t", p, leader, epoch, (1, 2), (1, 2)) for p in range(partitions))
    return MetadataSnapshot(
        brokers=NODES,
        topics=(TopicMetadata("t", uuid.UUID(int=7), False, 0, tuple(p.row for p in parts)),),
        controller_id=1,
    )


@pytest.fixture
def every_yield_a_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slices, "SLICE_S", 0.0)


@pytest.mark.usefixtures("every_yield_a_turn")
async def test_readers_between_slices_see_no_topic_or_all_of_it() -> None:
    store = MetadataStore()
    seen: list[int | None] = []
    done = anyio.Event()

    async def reader() -> None:
        while not done.is_set():
            ids = store.partitions_for_topic("t")
            seen.append(None if ids is None else len(ids))
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        await anyio.lowlevel.checkpoint()
        change = await store.apply_metadata_sliced(snapshot(epoch=3))
        done.set()
    assert len(seen) > 10, "the merge gave the loop no turn"
    assert set(seen) <= {None, PARTITIONS}, sorted(set(seen), key=str)[:5]
    assert seen[-1] == PARTITIONS
    assert len(change.leaders_changed) == PARTITIONS
    assert store.partitions_for_topic("t") == set(range(PARTITIONS))


@pytest.mark.usefixtures("every_yield_a_turn")
async def test_a_hint_applied_during_a_merge_is_not_undone_by_it() -> None:
    store = MetadataStore()
    store.apply_metadata(snapshot(epoch=3))
    last = TopicPartition("t", PARTITIONS - 1)

    async def hint_soon() -> None:
        await anyio.lowlevel.checkpoint()
        store.apply_leader_hints([LeaderHint("t", PARTITIONS - 1, 2, 9)])

    async with anyio.create_task_group() as tg:
        tg.start_soon(hint_soon)
        await store.apply_metadata_sliced(snapshot(epoch=4))  # older than the hint's 9
    assert store.leader_epoch(last) == 9
    assert store.leader_for(last) == NODES[1]
    assert store.leader_epoch(TopicPartition("t", 0)) == 4


@pytest.mark.usefixtures("every_yield_a_turn")
async def test_merges_run_one_at_a_time() -> None:
    """An answer that drops the topic, merged while another adds it, does not leave half of
    it behind: the second merge waits for the first."""
    from aiokafka_lead.error_code import ErrorCode

    store = MetadataStore()
    gone = MetadataSnapshot(
        brokers=NODES,
        topics=(TopicMetadata("t", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),),
        requested_topics=frozenset({"t"}),
    )

    async def drop_soon() -> None:
        await anyio.lowlevel.checkpoint()
        await store.apply_metadata_sliced(gone)

    async with anyio.create_task_group() as tg:
        tg.start_soon(drop_soon)
        await store.apply_metadata_sliced(snapshot(epoch=3))
    held = [p for p in range(PARTITIONS) if store.partition(TopicPartition("t", p)) is not None]
    assert store.partitions_for_topic("t") is None
    assert held == []


def test_an_unchanged_partition_keeps_the_row_the_store_holds() -> None:
    """A refresh that changes nothing leaves no garbage: the rows held stay."""
    store = MetadataStore()
    store.apply_metadata(snapshot(epoch=3, partitions=2))
    held = store._partitions[("t", 0)]
    change = store.apply_metadata(snapshot(epoch=3, partitions=2))
    assert not change
    assert store._partitions[("t", 0)] is held


def test_available_partitions_leave_out_those_without_a_usable_leader() -> None:
    store = MetadataStore()
    store.apply_metadata(snapshot(epoch=3, partitions=4))
    assert store.available_partitions("t") == [0, 1, 2, 3]
    assert store.partition_list("t") == [0, 1, 2, 3]
    rows = (
        (0, 1, 4, (1, 2), (1, 2), (), 0),
        (1, -1, 4, (1, 2), (1,), (), 0),  # no leader elected
        (2, 5, 4, (5, 2), (5, 2), (), 0),  # led by a node the answer does not list
        (3, 2, 4, (1, 2), (1, 2), (), 0),
    )
    store.apply_metadata(
        MetadataSnapshot(brokers=NODES, topics=(TopicMetadata("t", uuid.UUID(int=7), False, 0, rows),))
    )
    assert store.available_partitions("t") == [0, 3]
    assert store.partition_list("t") == [0, 1, 2, 3]
    store.apply_leader_hints([LeaderHint("t", 1, 2, 5)])  # a leader again
    assert store.available_partitions("t") == [0, 1, 3]
    assert store.available_partitions("absent") == []


@pytest.mark.usefixtures("every_yield_a_turn")
async def test_a_cancelled_merge_still_completes_and_tells_the_listeners() -> None:
    """Cancelled halfway, a merge would leave leaders changed that no listener heard of, and
    the next answer (equal to them) would announce nothing either."""
    store = MetadataStore()
    store.apply_metadata(snapshot(epoch=3))
    heard: list[int] = []
    store.add_listener(lambda change: heard.append(len(change.leaders_changed)))
    with anyio.move_on_after(0):  # cancelled at its first turn
        await store.apply_metadata_sliced(snapshot(epoch=4, leader=2))
    assert heard == [PARTITIONS]
    assert {store.leader_epoch(TopicPartition("t", p)) for p in range(PARTITIONS)} == {4}
