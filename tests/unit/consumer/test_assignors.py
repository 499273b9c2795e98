"""Assignors as pure functions: balance, stickiness, cooperative hand-over."""

from __future__ import annotations

import pytest

from aiokafka_lead.consumer import (
    CooperativeStickyAssignor,
    MemberSubscription,
    RangePartitionAssignor,
    RoundRobinPartitionAssignor,
)
from aiokafka_lead.consumer.assignors import resolve_assignors
from aiokafka_lead.structs import TopicPartition as TP


def members(
    *names: str, topics: tuple[str, ...] = ("a", "b"), **owned: list[TP]
) -> dict[str, MemberSubscription]:
    return {
        n: MemberSubscription(n, topics, owned_partitions=tuple(owned.get(n, [])), generation_id=1)
        for n in names
    }


def test_range_gives_consecutive_ranges_per_topic() -> None:
    out = RangePartitionAssignor().assign({"a": 5, "b": 2}, members("m1", "m2"))
    assert out["m1"] == [TP("a", 0), TP("a", 1), TP("a", 2), TP("b", 0)]
    assert out["m2"] == [TP("a", 3), TP("a", 4), TP("b", 1)]


def test_roundrobin_deals_in_turn_and_respects_subscriptions() -> None:
    subs = {
        "m1": MemberSubscription("m1", ("a",)),
        "m2": MemberSubscription("m2", ("a", "b")),
    }
    out = RoundRobinPartitionAssignor().assign({"a": 3, "b": 2}, subs)
    assert out["m1"] == [TP("a", 0), TP("a", 2)]
    assert out["m2"] == [TP("a", 1), TP("b", 0), TP("b", 1)]


def test_static_members_sort_by_instance_id() -> None:
    subs = {
        "zzz": MemberSubscription("zzz", ("a",), group_instance_id="i1"),
        "aaa": MemberSubscription("aaa", ("a",), group_instance_id="i2"),
    }
    out = RangePartitionAssignor().assign({"a": 2}, subs)
    assert out == {"zzz": [TP("a", 0)], "aaa": [TP("a", 1)]}


def test_cooperative_sticky_keeps_owned_and_withholds_moves() -> None:
    everything = [TP("a", p) for p in range(6)]
    # m1 owned everything; m2 and m3 join
    subs = members("m1", "m2", "m3", topics=("a",), m1=everything)
    first = CooperativeStickyAssignor().assign({"a": 6}, subs)
    assert first["m1"] == everything[:2]  # keeps two, gives up four
    assert first["m2"] == [] and first["m3"] == []  # nothing moves in the same round
    # m1 revoked four and rejoins owning two: the second round hands them out
    subs = members("m1", "m2", "m3", topics=("a",), m1=everything[:2])
    second = CooperativeStickyAssignor().assign({"a": 6}, subs)
    assert second["m1"] == everything[:2]
    assert sorted(second["m2"] + second["m3"]) == everything[2:]
    assert len(second["m2"]) == len(second["m3"]) == 2


def test_cooperative_sticky_member_leaving_moves_only_its_partitions() -> None:
    p = [TP("a", i) for i in range(6)]
    subs = members("m1", "m2", topics=("a",), m1=p[:2], m2=p[2:4])  # m3 (p4, p5) left
    out = CooperativeStickyAssignor().assign({"a": 6}, subs)
    assert set(p[:2]) <= set(out["m1"]) and set(p[2:4]) <= set(out["m2"])
    assert sorted(out["m1"] + out["m2"]) == p
    assert {len(out["m1"]), len(out["m2"])} == {3}


def test_cooperative_sticky_double_claim_goes_to_newest_generation() -> None:
    subs = {
        "m1": MemberSubscription("m1", ("a",), owned_partitions=(TP("a", 0),), generation_id=3),
        "m2": MemberSubscription("m2", ("a",), owned_partitions=(TP("a", 0),), generation_id=2),
    }
    out = CooperativeStickyAssignor().assign({"a": 2}, subs)
    assert out["m1"] == [TP("a", 0)]
    assert out["m2"] == [TP("a", 1)]


def test_resolve_accepts_names_classes_and_instances() -> None:
    got = resolve_assignors(["range", RoundRobinPartitionAssignor, CooperativeStickyAssignor()])
    assert [a.name for a in got] == ["range", "roundrobin", "cooperative-sticky"]
    with pytest.raises(ValueError, match="unknown partition assignment strategy"):
        resolve_assignors(["sticky-ish"])
