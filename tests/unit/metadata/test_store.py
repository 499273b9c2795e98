"""MetadataStore epoch rules (GUIDE section 2), as tables."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import anyio
import pytest

from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.metadata import (
    BrokerNode,
    HintOutcome,
    LeaderHint,
    MetadataChange,
    MetadataSnapshot,
    MetadataStore,
    PartitionMetadata,
    TopicMetadata,
)
from aiokafka_lead.structs import TopicPartition

TP = TopicPartition("t", 0)
TOPIC_ID = uuid.UUID(int=0x0102)
NODES = (BrokerNode(1, "h1", 9092), BrokerNode(2, "h2", 9092), BrokerNode(3, "h3", 9092))


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def snapshot(
    leader: int,
    epoch: int,
    *,
    isr: tuple[int, ...] = (1, 2, 3),
    topic_id: uuid.UUID = TOPIC_ID,
    reliable: bool = True,
    partitions: int = 1,
    brokers: tuple[BrokerNode, ...] = NODES,
) -> MetadataSnapshot:
    parts = tuple(PartitionMetadata("t", p, leader, epoch, (1, 2, 3), isr) for p in range(partitions))
    return MetadataSnapshot(
        brokers=brokers,
        topics=(TopicMetadata("t", topic_id, False, 0, tuple(p.row for p in parts)),),
        controller_id=1,
        cluster_id="c",
        epochs_reliable=reliable,
    )


def store_with(leader: int = 1, epoch: int = 5, partitions: int = 1) -> tuple[MetadataStore, FakeClock]:
    clock = FakeClock()
    store = MetadataStore(stale_accept_count=3, stale_accept_after_s=10.0, clock=clock)
    store.apply_metadata(snapshot(leader, epoch, partitions=partitions))
    store.take_refresh_reasons()
    return store, clock


@dataclass
class MetaCase:
    name: str
    update: MetadataSnapshot
    leader: int
    epoch: int
    isr: tuple[int, ...] = (1, 2, 3)
    leader_changed: bool = False


META_CASES = [
    MetaCase("forward", snapshot(2, 6), 2, 6, leader_changed=True),
    MetaCase("equal epoch refreshes isr", snapshot(1, 5, isr=(1, 2)), 1, 5, isr=(1, 2)),
    MetaCase("older epoch ignored", snapshot(3, 4), 1, 5),
    MetaCase(
        "topic id change resets",
        snapshot(3, 0, topic_id=uuid.UUID(int=9)),
        3,
        0,
        leader_changed=True,
    ),
    MetaCase(
        "below v9: accepted, epoch unknown",
        snapshot(3, 2, reliable=False),
        3,
        -1,
        leader_changed=True,
    ),
    MetaCase("no leader: entry kept", snapshot(-1, 6), -1, 6, leader_changed=True),
]


@pytest.mark.parametrize("case", META_CASES, ids=[c.name for c in META_CASES])
def test_metadata_epoch_rules(case: MetaCase) -> None:
    store, _ = store_with(leader=1, epoch=5)
    change = store.apply_metadata(case.update)
    p = store.partition(TP)
    assert p is not None
    assert (p.leader_id, p.leader_epoch, p.isr_nodes) == (case.leader, case.epoch, case.isr)
    assert (TP in change.leaders_changed) == case.leader_changed


def test_no_leader_requests_refresh() -> None:
    store, _ = store_with()
    store.apply_metadata(snapshot(-1, 6))
    assert store.leader_for(TP) is None
    assert any("no leader" in r for r in store.take_refresh_reasons())


def test_lower_epoch_accepted_only_after_repeats_over_time() -> None:
    store, clock = store_with(leader=1, epoch=5)
    for _ in range(5):  # a burst against a lagging broker: never reverts
        store.apply_metadata(snapshot(3, 4))
    assert store.leader_epoch(TP) == 5
    assert store.stale_metadata_ignored == 5
    clock.now += 11.0  # the same lower epoch keeps coming back for over 10 s: unclean recovery
    store.apply_metadata(snapshot(3, 4))
    assert (store.partition(TP).leader_id, store.leader_epoch(TP)) == (3, 4)  # type: ignore[union-attr]


def test_lower_epoch_run_restarts_when_epoch_differs() -> None:
    store, clock = store_with(leader=1, epoch=5)
    store.apply_metadata(snapshot(3, 4))
    store.apply_metadata(snapshot(3, 4))
    clock.now += 11.0
    store.apply_metadata(snapshot(3, 3))  # a different lower epoch starts a new run
    assert store.leader_epoch(TP) == 5


def test_partial_metadata_keeps_other_topics_full_drops_them() -> None:
    store, _ = store_with()
    other = TopicMetadata("u", uuid.UUID(int=7), False, 0, (PartitionMetadata("u", 0, 2, 1).row,))
    partial = MetadataSnapshot(brokers=NODES, topics=(other,), requested_topics=frozenset({"u"}))
    store.apply_metadata(partial)
    assert store.topics() == {"t", "u"}
    full = MetadataSnapshot(brokers=NODES, topics=(other,))
    change = store.apply_metadata(full)
    assert store.topics() == {"u"}
    assert change.topics_removed == {"t"}
    assert store.partition(TP) is None
    assert store.topic_name(TOPIC_ID) is None


def test_unknown_topic_error_drops_topic_and_is_reported() -> None:
    store, _ = store_with()
    missing = MetadataSnapshot(
        brokers=NODES,
        topics=(TopicMetadata("t", error_code=E.UNKNOWN_TOPIC_OR_PARTITION),),
        requested_topics=frozenset({"t"}),
    )
    store.apply_metadata(missing)
    assert store.partitions_for_topic("t") is None
    assert store.topic_error("t") == 3


def test_nodes_replaced_by_full_broker_list() -> None:
    store, _ = store_with()
    moved = (BrokerNode(1, "h1", 9092), BrokerNode(2, "h2", 9999))
    change = store.apply_metadata(snapshot(1, 5, brokers=moved))
    assert change.nodes_changed == {2}
    assert change.nodes_removed == {3}
    assert store.node(2) == BrokerNode(2, "h2", 9999)


def test_topic_ids_map_both_ways() -> None:
    store, _ = store_with()
    assert store.topic_id("t") == TOPIC_ID
    assert store.topic_name(TOPIC_ID) == "t"
    assert store.partitions_for_topic("t") == {0}


# ------------------------------------------------------------------ KIP-951 hints
@dataclass
class HintCase:
    name: str
    hint: LeaderHint
    endpoints: tuple[BrokerNode, ...]
    outcome: HintOutcome
    leader: int
    epoch: int


HINT_CASES = [
    HintCase("advances", LeaderHint("t", 0, 2, 6), (), HintOutcome.APPLIED, 2, 6),
    HintCase("equal epoch", LeaderHint("t", 0, 2, 5), (), HintOutcome.STALE_EPOCH, 1, 5),
    HintCase("older epoch", LeaderHint("t", 0, 2, 4), (), HintOutcome.STALE_EPOCH, 1, 5),
    HintCase("leader -1", LeaderHint("t", 0, -1, 6), (), HintOutcome.INVALID, 1, 5),
    HintCase("epoch -1", LeaderHint("t", 0, 2, -1), (), HintOutcome.INVALID, 1, 5),
    HintCase("unknown partition", LeaderHint("t", 9, 2, 6), (), HintOutcome.UNKNOWN_PARTITION, 1, 5),
    HintCase("unknown node", LeaderHint("t", 0, 7, 6), (), HintOutcome.UNKNOWN_NODE, 1, 5),
    HintCase(
        "node only in endpoints",
        LeaderHint("t", 0, 7, 6),
        (BrokerNode(7, "h7", 9097),),
        HintOutcome.APPLIED,
        7,
        6,
    ),
]


@pytest.mark.parametrize("case", HINT_CASES, ids=[c.name for c in HINT_CASES])
def test_hint_rules(case: HintCase) -> None:
    store, _ = store_with(leader=1, epoch=5)
    version = store.version
    outcomes = store.apply_leader_hints([case.hint], case.endpoints, reason="produce")
    assert outcomes == {case.hint.tp: case.outcome}
    p = store.partition(TP)
    assert p is not None
    assert (p.leader_id, p.leader_epoch) == (case.leader, case.epoch)
    assert p.isr_nodes == (1, 2, 3)  # a hint changes leadership only
    assert (store.version != version) == (case.outcome is HintOutcome.APPLIED)
    # the expedited refresh is requested whatever happened to the hint
    assert store.refresh_pending
    assert store.hint_outcomes[case.outcome] == 1


def test_refresh_requested_even_without_hints() -> None:
    store, _ = store_with()
    store.apply_leader_hints([], (), reason="produce NOT_LEADER_OR_FOLLOWER")
    assert store.take_refresh_reasons() == ["produce NOT_LEADER_OR_FOLLOWER: 0 partition(s)"]
    assert not store.refresh_pending


def test_endpoints_update_address_and_never_remove() -> None:
    store, _ = store_with()
    store.apply_leader_hints([LeaderHint("t", 0, 2, 6)], (BrokerNode(2, "new-host", 19092),))
    assert store.leader_for(TP) == BrokerNode(2, "new-host", 19092)
    assert {n.node_id for n in store.nodes()} == {1, 2, 3}


def test_endpoints_of_rejected_hints_change_nothing() -> None:
    store, _ = store_with()
    store.apply_leader_hints([LeaderHint("t", 0, 2, 5)], (BrokerNode(2, "new-host", 19092),))
    assert store.node(2) == BrokerNode(2, "h2", 9092)


def test_only_hinted_partitions_change_and_two_leaders_in_one_response() -> None:
    store, _ = store_with(leader=1, epoch=5, partitions=3)
    outcomes = store.apply_leader_hints(
        [LeaderHint("t", 0, 2, 6), LeaderHint("t", 1, 3, 6)], (), reason="produce"
    )
    assert set(outcomes.values()) == {HintOutcome.APPLIED}
    leaders = {p: store.partition(TopicPartition("t", p)).leader_id for p in range(3)}  # type: ignore[union-attr]
    assert leaders == {0: 2, 1: 3, 2: 1}


def test_stale_metadata_after_applied_hint_does_not_revert() -> None:
    store, _ = store_with(leader=1, epoch=5)
    store.apply_leader_hints([LeaderHint("t", 0, 2, 6)])
    store.apply_metadata(snapshot(1, 5))  # a lagging broker's view
    assert (store.partition(TP).leader_id, store.leader_epoch(TP)) == (2, 6)  # type: ignore[union-attr]
    store.apply_metadata(snapshot(2, 6, isr=(2, 3)))  # the caught-up view, same epoch
    assert store.partition(TP).isr_nodes == (2, 3)  # type: ignore[union-attr]


def test_hint_after_unreliable_metadata_applies() -> None:
    store, _ = store_with()
    store.apply_metadata(snapshot(1, 5, reliable=False))
    assert store.apply_leader_hints([LeaderHint("t", 0, 2, 0)])[TP] is HintOutcome.APPLIED


# ------------------------------------------------------------------ notifications
def test_listeners_see_changes_and_not_noops() -> None:
    store, _ = store_with()
    seen: list[MetadataChange] = []
    store.add_listener(seen.append)
    store.apply_metadata(snapshot(1, 5))  # nothing new
    store.apply_leader_hints([LeaderHint("t", 0, 2, 6)])
    assert len(seen) == 1 and seen[0].leaders_changed == {TP}
    store.remove_listener(seen.append)


async def test_wait_for_change_wakes_on_hint() -> None:
    store, _ = store_with()
    version = store.version
    woke: list[int] = []

    async def waiter() -> None:
        woke.append(await store.wait_for_change(version))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert woke == []
            store.apply_leader_hints([LeaderHint("t", 0, 2, 6)])
    assert woke == [store.version]


async def test_wait_refresh_requested() -> None:
    store, _ = store_with()

    async def ask() -> None:
        await anyio.wait_all_tasks_blocked()
        store.request_refresh("test: why")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await store.wait_refresh_requested()
    assert store.take_refresh_reasons() == ["test: why"]
    assert store.refresh_requests["test"] == 1


def test_lagging_metadata_cannot_undo_an_address_from_node_endpoints() -> None:
    store, _ = store_with(leader=1, epoch=5)
    store.apply_leader_hints([LeaderHint("t", 0, 2, 6)], (BrokerNode(2, "h2", 19092),))
    change = store.apply_metadata(snapshot(1, 5))  # lagging: epoch 5 < 6, old address of node 2
    assert store.node(2) == BrokerNode(2, "h2", 19092)
    assert 2 not in change.nodes_changed
    store.apply_metadata(snapshot(2, 6, brokers=(NODES[0], BrokerNode(2, "h2", 29092), NODES[2])))
    assert store.node(2) == BrokerNode(2, "h2", 29092)  # a caught-up view may change it


def test_full_metadata_keeps_a_node_that_still_leads_a_partition() -> None:
    store, _ = store_with(leader=1, epoch=5)
    store.apply_leader_hints([LeaderHint("t", 0, 7, 6)], (BrokerNode(7, "h7", 9097),))
    store.apply_metadata(snapshot(7, 6))  # lists nodes 1-3 only, yet node 7 leads t-0
    assert store.leader_for(TP) == BrokerNode(7, "h7", 9097)
