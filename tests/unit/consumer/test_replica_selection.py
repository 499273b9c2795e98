"""``ReadReplicas`` (KIP-392) on its own: when a preferred read replica holds and when a
partition goes back to its leader, on a metadata store and a clock the test controls."""

from __future__ import annotations

import uuid

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.consumer.replica_selection import Answer, ReadReplicas
from aiokafka_lead.metadata.model import BrokerNode, MetadataSnapshot, PartitionMetadata, TopicMetadata
from aiokafka_lead.metadata.store import MetadataStore
from aiokafka_lead.structs import TopicPartition

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
NODES = (BrokerNode(1, "h1", 9092, "a"), BrokerNode(2, "h2", 9092, "b"), BrokerNode(3, "h3", 9092, "c"))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def snapshot(epoch: int, brokers: tuple[BrokerNode, ...] = NODES, leader: int = 1) -> MetadataSnapshot:
    rows = tuple(PartitionMetadata("t", p, leader, epoch, (1, 2, 3), (1, 2, 3)).row for p in (0, 1))
    return MetadataSnapshot(brokers=brokers, topics=(TopicMetadata("t", uuid.UUID(int=7), False, 0, rows),))


def setup(expiry_ms: int = 60_000) -> tuple[MetadataStore, ReadReplicas, Clock]:
    clock = Clock()
    store = MetadataStore(clock=clock)
    store.apply_metadata(snapshot(5))
    replicas = ReadReplicas(
        store, expiry_ms=expiry_ms, backoff=ExponentialBackoff(100, 1000, jitter=0), clock=clock
    )
    return store, replicas, clock


def leader(store: MetadataStore, tp: TopicPartition) -> BrokerNode:
    node = store.leader_for(tp)
    assert node is not None
    return node


def test_a_redirect_holds_until_it_expires() -> None:
    store, replicas, clock = setup(expiry_ms=10_000)
    assert replicas.node_for(TP0, leader(store, TP0)) == 1
    assert replicas.on_answer(TP0, 1, 2, 5, 0) is Answer.REDIRECTED
    assert replicas.node_for(TP0, leader(store, TP0)) == 2
    assert replicas.node_for(TP1, leader(store, TP1)) == 1  # per partition
    clock.now += 9.9
    assert replicas.node_for(TP0, leader(store, TP0)) == 2
    clock.now += 0.2
    assert replicas.node_for(TP0, leader(store, TP0)) == 1
    assert replicas.fallbacks == {"expired": 1} and replicas.in_use() == {}


def test_a_new_leader_epoch_ends_the_redirect() -> None:
    store, replicas, _ = setup()
    replicas.on_answer(TP0, 1, 2, 5, 0)
    store.apply_metadata(snapshot(6))  # same leader, next epoch
    assert replicas.node_for(TP0, leader(store, TP0)) == 1
    assert replicas.fallbacks == {"leader changed": 1}


def test_a_redirect_from_an_answer_to_an_older_epoch_does_not_hold() -> None:
    store, replicas, _ = setup()
    replicas.on_answer(TP0, 1, 2, 4, 0)  # the Fetch went out at epoch 4; the store has 5
    assert replicas.node_for(TP0, leader(store, TP0)) == 1


def test_errors_only_move_the_partition_they_are_for_and_only_from_the_replica() -> None:
    _store, replicas, _ = setup()
    replicas.on_answer(TP0, 1, 2, 5, 0)
    replicas.on_answer(TP1, 1, 2, 5, 0)
    assert not replicas.on_error(TP0, 1, "NOT_LEADER_OR_FOLLOWER")  # from the leader: no change
    assert replicas.on_error(TP1, 2, "UNKNOWN_LEADER_EPOCH")
    assert replicas.in_use() == {TP0: 2}
    assert replicas.fallbacks == {"UNKNOWN_LEADER_EPOCH": 1}


def test_a_failed_replica_is_avoided_with_a_growing_backoff() -> None:
    store, replicas, clock = setup()
    replicas.on_answer(TP0, 1, 2, 5, 0)
    replicas.on_answer(TP1, 1, 2, 5, 0)
    assert replicas.on_fetch_failed(3, [TP0, TP1]) == set()  # not their replica: nothing moves
    assert replicas.on_fetch_failed(2, [TP0, TP1]) == {TP0, TP1}
    assert replicas.node_for(TP0, leader(store, TP0)) == 1
    # while avoided, a leader naming it again is asked again at once, without the rack
    assert replicas.send_rack(1)
    assert replicas.on_answer(TP0, 1, 2, 5, 0) is Answer.WITHOUT_RACK
    assert not replicas.send_rack(1) and replicas.send_rack(3)
    # a leader naming it even without the rack: back off instead
    assert replicas.on_answer(TP0, 1, 2, 5, 0) is Answer.NOT_FOLLOWED
    clock.now += 0.1
    assert replicas.send_rack(1)
    assert replicas.on_answer(TP0, 1, 2, 5, 0) is Answer.REDIRECTED
    assert replicas.on_fetch_failed(2, [TP0]) == {TP0}
    clock.now += 0.1
    assert replicas.on_answer(TP0, 1, 2, 5, 0) is Answer.WITHOUT_RACK  # second failure: 200 ms
    clock.now += 0.1
    assert replicas.send_rack(1)
    assert replicas.on_answer(TP0, 1, 2, 5, 100) is Answer.REDIRECTED
    assert replicas.bytes_by_node == {1: 100}


def test_a_replica_missing_from_metadata_is_not_followed_and_asks_for_metadata() -> None:
    store, replicas, _ = setup()
    assert replicas.on_answer(TP0, 1, 9, 5, 0) is Answer.NOT_FOLLOWED
    assert any("preferred read replica 9" in r for r in store.take_refresh_reasons())
    replicas.on_answer(TP0, 1, 2, 5, 0)
    store.apply_metadata(snapshot(5, brokers=NODES[:1] + NODES[2:]))  # node 2 left
    assert replicas.node_for(TP0, leader(store, TP0)) == 1
    assert replicas.fallbacks["replica not in metadata"] == 1


def test_a_node_naming_itself_or_nobody_is_plain_data() -> None:
    _store, replicas, _ = setup()
    assert replicas.on_answer(TP0, 1, -1, 5, 10) is Answer.DATA
    assert replicas.on_answer(TP0, 1, 1, 5, 10) is Answer.DATA
    replicas.on_answer(TP0, 1, 2, 5, 0)
    assert replicas.on_answer(TP0, 2, 2, 5, 10) is Answer.DATA
    assert replicas.in_use() == {TP0: 2}
    replicas.forget([TP0])
    assert replicas.in_use() == {}
    assert replicas.metrics()["bytes_fetched_by_node"] == {1: 20, 2: 10}
