"""aiokafka-style assignors (the adapter) and the eager sticky assignor, as pure functions."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

import aiokafka.coordinator.assignors.range as aiokafka_range
import aiokafka.coordinator.assignors.roundrobin as aiokafka_roundrobin
import aiokafka.coordinator.assignors.sticky.sticky_assignor as aiokafka_sticky
import aiokafka.coordinator.protocol as aiokafka_protocol
import pytest

from aiokafka_lead.consumer.assignors import (
    AiokafkaAssignorAdapter,
    MemberAssignment,
    MemberSubscription,
    RangePartitionAssignor,
    RoundRobinPartitionAssignor,
    resolve_assignors,
)
from aiokafka_lead.coordinator.assignors.abstract import AbstractPartitionAssignor, AssignmentCluster
from aiokafka_lead.coordinator.assignors.sticky.sticky_assignor import (
    StickyAssignorUserDataV1,
    StickyPartitionAssignor,
)
from aiokafka_lead.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka_lead.errors import DecodeError
from aiokafka_lead.structs import TopicPartition as TP


class EverythingToTheLast(AbstractPartitionAssignor):
    """aiokafka-style: every partition to the member whose id sorts last; records its calls."""

    name = "everything-to-the-last"
    version = 0
    seen: list[tuple[str, Any]] = []

    @classmethod
    def assign(
        cls, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        cls.seen.append(("assign", {m: (md.subscription, md.user_data) for m, md in members.items()}))
        last = max(members)
        topics = sorted({t for md in members.values() for t in md.subscription})
        out = {m: ConsumerProtocolMemberAssignment(cls.version, [], b"") for m in members}
        out[last] = ConsumerProtocolMemberAssignment(
            cls.version,
            [(t, sorted(cluster.partitions_for_topic(t) or ())) for t in topics],
            b"you-got-it-all",
        )
        return out

    @classmethod
    def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        return ConsumerProtocolMemberMetadata(cls.version, sorted(topics), b"hello")

    @classmethod
    def on_assignment(cls, assignment: ConsumerProtocolMemberAssignment) -> None:
        cls.seen.append(("on_assignment", assignment))

    @classmethod
    def on_generation_assignment(cls, generation: int) -> None:
        cls.seen.append(("generation", generation))


def subs(
    topics_by_member: Mapping[str, Iterable[str]], user_data: Mapping[str, bytes] = {}
) -> dict[str, Any]:
    return {
        m: MemberSubscription(m, tuple(topics), user_data=user_data.get(m))
        for m, topics in topics_by_member.items()
    }


def test_adapter_speaks_aiokafka_shapes() -> None:
    EverythingToTheLast.seen = []
    (adapter,) = resolve_assignors([EverythingToTheLast])
    assert isinstance(adapter, AiokafkaAssignorAdapter) and adapter.name == "everything-to-the-last"
    assert adapter.subscription_user_data(["b", "a"]) == b"hello"
    plan = adapter.assign({"a": 2, "b": 1}, subs({"m1": ["a", "b"], "m2": ["a"]}, {"m1": b"hi"}))
    assert plan == {"m1": [], "m2": [TP("a", 0), TP("a", 1), TP("b", 0)]}
    assert EverythingToTheLast.seen[0] == ("assign", {"m1": (["a", "b"], b"hi"), "m2": (["a"], b"")})
    assert adapter.assignment_user_data("m2") == b"you-got-it-all"
    assert adapter.assignment_user_data("m1") is None
    adapter.on_assignment(MemberAssignment((TP("a", 0), TP("a", 1), TP("b", 0)), b"you-got-it-all", 3), 7)
    kind, given = EverythingToTheLast.seen[1]
    assert kind == "on_assignment"
    assert given == ConsumerProtocolMemberAssignment(3, [("a", [0, 1]), ("b", [0])], b"you-got-it-all")
    assert given.partitions() == [TP("a", 0), TP("a", 1), TP("b", 0)]
    assert EverythingToTheLast.seen[2] == ("generation", 7)


def test_adapter_accepts_instances_and_rejects_bad_results() -> None:
    class Broken(EverythingToTheLast):
        name = "broken"

        @classmethod
        def assign(cls, cluster: Any, members: Any) -> Any:
            return {m: [TP("a", 0)] for m in members}

    (adapter,) = resolve_assignors([Broken()])
    assert adapter.name == "broken"
    with pytest.raises(TypeError, match="not a ConsumerProtocolMemberAssignment"):
        adapter.assign({"a": 1}, subs({"m1": ["a"]}))
    with pytest.raises(ValueError, match="unknown partition assignment strategy"):
        resolve_assignors([object()])


@pytest.mark.parametrize(
    ("theirs", "mine"),
    [
        (aiokafka_range.RangePartitionAssignor, RangePartitionAssignor()),
        (aiokafka_roundrobin.RoundRobinPartitionAssignor, RoundRobinPartitionAssignor()),
    ],
)
def test_aiokafka_builtin_assignors_run_on_our_cluster_view(theirs: Any, mine: Any) -> None:
    """aiokafka's own assignor classes, unchanged, through the adapter: same plan as ours."""
    rng = random.Random(3)
    for _ in range(50):
        counts = {t: rng.randrange(1, 7) for t in ("a", "b", "c")}
        members = subs(
            {f"m{i}": rng.sample(sorted(counts), rng.randrange(1, 4)) for i in range(rng.randrange(1, 5))}
        )
        plan = AiokafkaAssignorAdapter(theirs).assign(counts, members)
        assert {m: sorted(tps) for m, tps in plan.items()} == {
            m: sorted(tps) for m, tps in mine.assign(counts, members).items()
        }


def test_aiokafka_sticky_class_runs_on_our_cluster_view() -> None:
    """aiokafka's sticky assignor calls cluster.topics() too."""
    plan = AiokafkaAssignorAdapter(aiokafka_sticky.StickyPartitionAssignor).assign(
        {"a": 3, "b": 3}, subs({"m1": ["a", "b"], "m2": ["a", "b"]})
    )
    assert sorted(len(v) for v in plan.values()) == [3, 3]
    assert sorted(tp for tps in plan.values() for tp in tps) == [TP(t, p) for t in "ab" for p in range(3)]


def test_cluster_view() -> None:
    cluster = AssignmentCluster({"a": 3})
    assert cluster.partitions_for_topic("a") == {0, 1, 2}
    assert cluster.partitions_for_topic("nope") is None
    assert cluster.topics() == {"a"}


@pytest.mark.parametrize("version", [0, 1, 3])
def test_protocol_shapes_interoperate_with_aiokafka(version: int) -> None:
    meta = ConsumerProtocolMemberMetadata(version, ["a", "b"], b"ud")
    theirs = aiokafka_protocol.ConsumerProtocolMemberMetadata.decode(meta.encode())
    assert (theirs.version, theirs.subscription, theirs.user_data) == (version, ["a", "b"], b"ud")
    back = aiokafka_protocol.ConsumerProtocolMemberMetadata(0, ["x"], b"").encode()
    assert ConsumerProtocolMemberMetadata.decode(back) == ConsumerProtocolMemberMetadata(0, ["x"], b"")
    assignment = ConsumerProtocolMemberAssignment(version, [("a", [0, 2])], b"ud")
    theirs_a = aiokafka_protocol.ConsumerProtocolMemberAssignment.decode(assignment.encode())
    assert (theirs_a.version, [tuple(x) for x in theirs_a.assignment]) == (version, [("a", [0, 2])])
    back_a = aiokafka_protocol.ConsumerProtocolMemberAssignment(0, [("t", [1])], b"").encode()
    assert ConsumerProtocolMemberAssignment.decode(back_a).partitions() == [TP("t", 1)]


# ------------------------------------------------------------------------------- sticky


def test_sticky_user_data_is_aiokafka_and_java_v1() -> None:
    ours = StickyAssignorUserDataV1([("a", [0, 2]), ("b", [1])], 5)
    theirs = aiokafka_sticky.StickyAssignorUserDataV1([("a", [0, 2]), ("b", [1])], 5)
    assert ours.encode() == theirs.encode()
    assert StickyAssignorUserDataV1.decode(theirs.encode()) == ours
    assert StickyAssignorUserDataV1.decode(theirs.encode()[:-4]).generation == -1  # V0: no generation
    for cut in (1, 5, 9):
        with pytest.raises(DecodeError):
            StickyAssignorUserDataV1.decode(theirs.encode()[:-cut])
    with pytest.raises(DecodeError):
        StickyAssignorUserDataV1.decode(theirs.encode() + b"\x00")


def sticky_round(
    counts: Mapping[str, int],
    topics_by_member: Mapping[str, Iterable[str]],
    previous: Mapping[str, Iterable[TP]],
    generation: int = 1,
) -> dict[str, list[TP]]:
    """One rebalance: each member's assignor instance sends what it was given last."""
    members = {}
    for m, topics in topics_by_member.items():
        member_assignor = StickyPartitionAssignor()
        if m in previous:
            member_assignor.on_assignment(MemberAssignment(tuple(previous[m])), generation)
        members[m] = MemberSubscription(
            m, tuple(topics), user_data=member_assignor.subscription_user_data(topics)
        )
    return StickyPartitionAssignor().assign(counts, members)


def check_valid_and_balanced(
    counts: Mapping[str, int], topics_by_member: Mapping[str, Iterable[str]], plan: Mapping[str, list[TP]]
) -> None:
    everything = [
        TP(t, p)
        for t, n in counts.items()
        for p in range(n)
        if any(t in ts for ts in topics_by_member.values())
    ]
    assert sorted(tp for tps in plan.values() for tp in tps) == sorted(everything)
    for member, tps in plan.items():
        assert all(tp.topic in topics_by_member[member] for tp in tps)
    for giver, tps in plan.items():
        for taker, topics in topics_by_member.items():
            if any(tp.topic in topics for tp in tps):
                assert len(tps) <= len(plan[taker]) + 1, (giver, taker)


def test_sticky_aiokafka_docstring_example() -> None:
    counts = {"t0": 1, "t1": 2, "t2": 3}
    topics = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    plan = sticky_round(counts, topics, {})
    assert plan == {
        "C0": [TP("t0", 0)],
        "C1": [TP("t1", 0), TP("t1", 1)],
        "C2": [TP("t2", p) for p in range(3)],
    }
    del topics["C0"]
    again = sticky_round(counts, topics, plan)  # C0 left: 5 of 6 stay where they were
    assert again == {"C1": [TP("t0", 0), TP("t1", 0), TP("t1", 1)], "C2": [TP("t2", p) for p in range(3)]}


def test_sticky_keeps_everything_of_the_remaining_members() -> None:
    counts = {"a": 4, "b": 4}
    topics = {m: ["a", "b"] for m in ("C0", "C1", "C2")}
    first = sticky_round(counts, topics, {})
    check_valid_and_balanced(counts, topics, first)
    del topics["C1"]
    second = sticky_round(counts, topics, first)
    check_valid_and_balanced(counts, topics, second)
    for m in ("C0", "C2"):
        assert set(first[m]) <= set(second[m])


def test_sticky_a_newer_generation_wins_a_double_claim() -> None:
    counts = {"a": 2}
    old, new = StickyPartitionAssignor(), StickyPartitionAssignor()
    old.on_assignment(MemberAssignment((TP("a", 0), TP("a", 1))), 3)
    new.on_assignment(MemberAssignment((TP("a", 0),)), 4)
    members = {
        "old": MemberSubscription("old", ("a",), user_data=old.user_data()),
        "new": MemberSubscription("new", ("a",), user_data=new.user_data()),
    }
    assert StickyPartitionAssignor().assign(counts, members) == {"old": [TP("a", 1)], "new": [TP("a", 0)]}


def test_sticky_moves_a_partition_back_to_its_previous_owner() -> None:
    newer, older = StickyPartitionAssignor(), StickyPartitionAssignor()
    newer.on_assignment(MemberAssignment(tuple(TP("a", p) for p in range(4))), 4)
    older.on_assignment(MemberAssignment((TP("a", 0),)), 3)
    members = {
        "x": MemberSubscription("x", ("a",), user_data=newer.user_data()),
        "y": MemberSubscription("y", ("a",), user_data=older.user_data()),
    }
    # a-0 stays with the newer claim, then goes back to y when x has to give two away
    assert StickyPartitionAssignor().assign({"a": 4}, members) == {
        "x": [TP("a", 1), TP("a", 2)],
        "y": [TP("a", 0), TP("a", 3)],
    }


def test_sticky_ignores_unreadable_user_data_and_gone_partitions() -> None:
    members = {
        "m1": MemberSubscription("m1", ("a",), user_data=b"\x00\x00"),
        "m2": MemberSubscription(
            "m2", ("a",), user_data=StickyAssignorUserDataV1([("a", [0, 9]), ("gone", [0])], 1).encode()
        ),
    }
    plan = StickyPartitionAssignor().assign({"a": 2}, members)
    assert plan == {"m1": [TP("a", 1)], "m2": [TP("a", 0)]}


def optimal_kept(previous: Mapping[str, set[TP]], members: list[str], total: int) -> int:
    """With identical subscriptions: the most partitions that can stay with their owner."""
    low, extra = divmod(total, len(members))
    held = sorted((len(previous.get(m, ())) for m in members), reverse=True)
    return sum(min(h, low + (1 if i < extra else 0)) for i, h in enumerate(held))


def test_sticky_random_rebalances_are_balanced_and_keep_the_most() -> None:
    rng = random.Random(11)
    for _ in range(150):
        counts = {t: rng.randrange(1, 9) for t in ("a", "b", "c")}
        total = sum(counts.values())
        names = [f"m{i}" for i in range(rng.randrange(1, 7))]
        topics = {m: sorted(counts) for m in names}
        plan = sticky_round(counts, topics, {})
        for _ in range(4):  # members come and go, partitions are added
            if len(names) > 1 and rng.random() < 0.5:
                names.remove(rng.choice(names))
            else:
                names.append(f"m{rng.randrange(100, 10_000)}")
            if rng.random() < 0.3:
                counts[rng.choice(sorted(counts))] += 1
                total = sum(counts.values())
            topics = {m: sorted(counts) for m in names}
            previous = {m: set(tps) for m, tps in plan.items() if m in names}
            plan = sticky_round(counts, topics, previous)
            check_valid_and_balanced(counts, topics, plan)
            assert max(map(len, plan.values())) - min(map(len, plan.values())) <= 1
            kept = sum(len(previous.get(m, set()) & set(tps)) for m, tps in plan.items())
            assert kept == optimal_kept(previous, names, total)


def test_sticky_random_heterogeneous_subscriptions_are_balanced() -> None:
    rng = random.Random(5)
    for _ in range(150):
        counts = {t: rng.randrange(1, 6) for t in ("a", "b", "c", "d")}
        topics = {
            f"m{i}": rng.sample(sorted(counts), rng.randrange(1, 5)) for i in range(rng.randrange(1, 6))
        }
        plan = sticky_round(counts, topics, {})
        check_valid_and_balanced(counts, topics, plan)
        # a rebalance with the same members moves nothing
        assert sticky_round(counts, topics, plan, generation=2) == plan


def test_sticky_by_name_and_class() -> None:
    by_name, by_class = resolve_assignors(["sticky", StickyPartitionAssignor])
    assert isinstance(by_name, StickyPartitionAssignor) and isinstance(by_class, StickyPartitionAssignor)
    assert by_name is not by_class and by_name.name == "sticky"
    assert by_name.user_data() is None  # nothing to claim before the first assignment
