"""group_metadata() for the offsets of delivered records (KIP-447 fencing with a consumer
that rebalances in the background)."""

from __future__ import annotations

from aiokafka_lead.consumer.delivered import DeliveredMembership
from aiokafka_lead.consumer.subscription import ResetStrategy, SubscriptionState
from aiokafka_lead.structs import ConsumerGroupMetadata, TopicPartition

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def setup() -> tuple[SubscriptionState, list[ConsumerGroupMetadata], DeliveredMembership]:
    subs = SubscriptionState(ResetStrategy.EARLIEST)
    subs.subscribe(["t"])
    subs.set_assignment([TP0, TP1])
    now = [ConsumerGroupMetadata("g", 5, "m-1")]
    return subs, now, DeliveredMembership(subs, lambda: now[0])


def test_partitions_still_held_commit_with_the_current_membership() -> None:
    _, now, delivered = setup()
    delivered.delivered([TP0, TP1])
    now[0] = ConsumerGroupMetadata("g", 6, "m-1")  # a new epoch, the same partitions (KIP-848)
    assert delivered.group_metadata().generation_id == 6


def test_a_partition_reassigned_since_delivery_commits_with_the_delivery_membership() -> None:
    subs, now, delivered = setup()
    delivered.delivered([TP0])
    subs.set_assignment(())  # an eager rebalance: everything revoked ...
    subs.set_assignment([TP0, TP1])  # ... and given back, positions unknown again
    now[0] = ConsumerGroupMetadata("g", 7, "m-1")
    assert delivered.group_metadata() == ConsumerGroupMetadata("g", 5, "m-1")  # stale: fenced
    assert delivered.group_metadata().generation_id == 5  # asked twice for the same records
    delivered.delivered([TP0])  # records read under the new assignment
    assert delivered.group_metadata().generation_id == 7


def test_deliveries_before_the_answer_all_count() -> None:
    subs, now, delivered = setup()
    delivered.delivered([TP1])
    delivered.delivered([TP0])  # one transaction over two polls
    subs.remove_partitions([TP1])
    subs.add_partitions([TP1])
    now[0] = ConsumerGroupMetadata("g", 6, "m-1")
    assert delivered.group_metadata().generation_id == 5


def test_mid_rebalance_the_last_membership_held_is_sent_never_no_generation() -> None:
    _, now, delivered = setup()
    assert delivered.group_metadata().generation_id == 5
    now[0] = ConsumerGroupMetadata("g", -1, "")  # rejoining
    assert delivered.group_metadata() == ConsumerGroupMetadata("g", 5, "m-1")


def test_before_joining_there_is_no_generation() -> None:
    subs = SubscriptionState(ResetStrategy.EARLIEST)
    delivered = DeliveredMembership(subs, lambda: ConsumerGroupMetadata("g", -1, ""))
    assert delivered.group_metadata() == ConsumerGroupMetadata("g", -1, "")
