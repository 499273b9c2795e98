"""aiokafka_lead.structs against the installed aiokafka.structs, field by field."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import aiokafka.structs as A
import pytest

import aiokafka_lead.structs as L
from aiokafka_lead.consumer import consumer as consumer_module

TUPLES = ["TopicPartition", "RecordMetadata", "BrokerMetadata", "PartitionMetadata"]


@pytest.mark.parametrize("name", [*TUPLES, "OffsetAndMetadata", "OffsetAndTimestamp"])
def test_named_tuple_fields_and_defaults(name: str) -> None:
    theirs, mine = getattr(A, name), getattr(L, name)
    assert mine._fields == theirs._fields
    # where aiokafka has a default we have the same one (we may have more defaults)
    for field, default in theirs._field_defaults.items():
        assert mine._field_defaults[field] == default


def test_consumer_record_fields() -> None:
    theirs = [(f.name, f.default) for f in dataclasses.fields(A.ConsumerRecord)]
    mine = [(f.name, f.default) for f in dataclasses.fields(L.ConsumerRecord) if f.compare]
    assert mine == theirs
    args: list[Any] = ["t", 0, 5, 1000, 0, b"k", b"v", None, 1, 1, []]
    assert repr(L.ConsumerRecord(*args)) == repr(A.ConsumerRecord(*args))
    # the leader epoch is extra and takes no part in equality
    assert L.ConsumerRecord(*args, leader_epoch=7) == L.ConsumerRecord(*args)
    assert L.ConsumerRecord(*args, leader_epoch=7).leader_epoch == 7


@pytest.mark.parametrize(
    ("name", "args"),
    [("OffsetAndTimestamp", (5, 1_700_000_000_000)), ("OffsetAndMetadata", (5, "meta"))],
)
def test_epoch_carrying_tuples_behave_as_aiokafka_two_field_tuples(name: str, args: tuple[Any, Any]) -> None:
    theirs = getattr(A, name)(*args)
    mine = getattr(L, name)(*args, 7)
    assert mine == theirs and theirs == mine
    assert hash(mine) == hash(theirs)
    assert repr(mine) == repr(theirs)
    assert len(mine) == 2 and tuple(mine) == args
    first, second = mine
    assert (first, second) == args
    assert mine.leader_epoch == 7
    assert getattr(L, name)(*args).leader_epoch == -1
    assert {mine: 1}[theirs] == 1
    assert mine._asdict() == theirs._asdict()


@pytest.mark.parametrize("name", ["OffsetAndTimestamp", "OffsetAndMetadata"])
def test_epoch_survives_copy_pickle_and_replace(name: str) -> None:
    cls = getattr(L, name)
    value = cls(5, "m" if name == "OffsetAndMetadata" else 10, 3)
    for clone in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert clone == value and clone.leader_epoch == 3 and type(clone) is cls
    replaced = value._replace(offset=6)
    assert replaced.offset == 6 and replaced.leader_epoch == 3
    assert value._replace(leader_epoch=9).leader_epoch == 9


def test_offsets_for_times_result_is_the_structs_class() -> None:
    assert consumer_module.OffsetAndTimestamp is L.OffsetAndTimestamp


def test_offset_and_metadata_from_aiokafka_tuple() -> None:
    theirs = A.OffsetAndMetadata(10, "x")
    mine = L.OffsetAndMetadata(*theirs)
    assert mine == theirs and mine.leader_epoch == -1
