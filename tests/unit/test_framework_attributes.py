"""aiokafka's private attributes that frameworks read (docs/migrating.md, "Frameworks"),
compared with the installed aiokafka's for the same construction. The ones that need a
broker (``_partition``, ``client._wait_on_metadata``, ``_coordinator.member_id``) are in
tests/parity/test_frameworks.py."""

from __future__ import annotations

import json
from typing import Any

import aiokafka
import aiokafka.producer.producer
import pytest
from aiokafka.coordinator.assignors.roundrobin import (
    RoundRobinPartitionAssignor as AiokafkaRoundRobin,
)
from kafka.coordinator.assignors.range import RangePartitionAssignor as KafkaPythonRange
from kafka.coordinator.assignors.roundrobin import (
    RoundRobinPartitionAssignor as KafkaPythonRoundRobin,
)
from kafka.partitioner.default import DefaultPartitioner as KafkaPythonPartitioner

import aiokafka_lead
import aiokafka_lead.producer.producer
from aiokafka_lead.client_view import AIOKafkaClientView
from aiokafka_lead.consumer.assignor_base import MemberSubscription
from aiokafka_lead.consumer.assignors import AiokafkaAssignorAdapter, resolve_assignors
from aiokafka_lead.errors import UnknownTopicOrPartitionError
from aiokafka_lead.structs import TopicPartition

BOOTSTRAPS: list[str | list[str]] = ["127.0.0.1:9", "h1:9092,h2:9093", ["h1:9092", "h2"]]


def serialize(value: Any) -> bytes:
    return json.dumps(value).encode()


# ------------------------------------------------------------------ producer


def test_acks_missing_marker_is_at_aiokafkas_path_and_means_our_default() -> None:
    missing = aiokafka_lead.producer.producer._missing
    assert missing is not aiokafka.producer.producer._missing  # ours, not the real one's
    unset = aiokafka_lead.AIOKafkaProducer(client_id="p")
    marked = aiokafka_lead.AIOKafkaProducer(client_id="p", acks=missing)
    assert marked._config == unset._config
    assert marked._config.acks == "all"
    assert marked._config.idempotent
    # with idempotence off, as aiokafka's marker under enable_idempotence=False: acks stays ours
    plain = aiokafka_lead.AIOKafkaProducer(acks=missing, enable_idempotence=False)
    assert plain._config.acks_code == -1
    assert not plain._config.idempotent


def test_another_object_as_acks_is_still_refused() -> None:
    with pytest.raises(ValueError, match="acks must be one of"):
        aiokafka_lead.AIOKafkaProducer(acks=object())


@pytest.mark.parametrize("bootstrap", BOOTSTRAPS)
async def test_producer_client_view_matches_aiokafka(bootstrap: str | list[str]) -> None:
    ours = aiokafka_lead.AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="cid")
    theirs = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="cid")
    assert ours.client._bootstrap_servers == theirs.client._bootstrap_servers
    assert ours.client._client_id == theirs.client._client_id == "cid"
    assert ours.client is ours.client  # one view: what a tracer caches on it stays
    ours.client._dd_cluster_id = "cached"  # type: ignore[attr-defined]
    assert ours.client._dd_cluster_id == "cached"  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        ours.client._client_id = "other"  # type: ignore[misc]


async def test_producer_default_client_id_is_the_one_sent() -> None:
    ours = aiokafka_lead.AIOKafkaProducer()
    assert ours.client._client_id == ours._config.client_id
    assert ours.client._client_id.startswith("aiokafka-lead-producer-")  # aiokafka: aiokafka-producer-N


async def test_producer_serializers_and_closed_match_aiokafka() -> None:
    kwargs: dict[str, Any] = {"key_serializer": serialize, "value_serializer": serialize}
    ours = aiokafka_lead.AIOKafkaProducer(**kwargs)
    theirs = aiokafka.AIOKafkaProducer(**kwargs)
    assert ours._key_serializer is theirs._key_serializer is serialize
    assert ours._value_serializer is theirs._value_serializer is serialize
    assert aiokafka_lead.AIOKafkaProducer()._key_serializer is aiokafka.AIOKafkaProducer()._key_serializer
    assert ours._closed is theirs._closed is False
    await ours.stop()
    await theirs.stop()
    assert ours._closed is theirs._closed is True


async def test_create_batch_matches_aiokafka() -> None:
    for producer in (aiokafka_lead.AIOKafkaProducer(), aiokafka.AIOKafkaProducer()):
        batch = producer.create_batch()
        meta = batch.append(key=b"k", value=b"v", timestamp=None, headers=[("h", b"1")])
        assert meta is not None and meta.offset == 0
        assert batch.record_count() == 1


def test_partition_before_the_topics_metadata_is_a_clear_error() -> None:
    producer = aiokafka_lead.AIOKafkaProducer()
    with pytest.raises(UnknownTopicOrPartitionError, match="_wait_on_metadata"):
        producer._partition("t", None, b"k", b"v", b"k", b"v")


async def test_a_kafka_python_partitioner_object_is_accepted_as_by_aiokafka() -> None:
    partitioner = KafkaPythonPartitioner()
    ours = aiokafka_lead.AIOKafkaProducer(partitioner=partitioner)
    theirs = aiokafka.AIOKafkaProducer(partitioner=partitioner)
    assert ours._partitioner is theirs._partitioner is partitioner


async def test_client_view_of_a_consumer_does_not_wait_on_metadata() -> None:
    view = aiokafka_lead.AIOKafkaConsumer()._client
    assert isinstance(view, AIOKafkaClientView)
    with pytest.raises(NotImplementedError, match="producer"):
        await view._wait_on_metadata("t")


# ------------------------------------------------------------------ consumer


@pytest.mark.parametrize("bootstrap", BOOTSTRAPS)
async def test_consumer_client_view_matches_aiokafka(bootstrap: str | list[str]) -> None:
    ours = aiokafka_lead.AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id="cid")
    theirs = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id="cid")
    assert ours._client._bootstrap_servers == theirs._client._bootstrap_servers
    assert ours._client._client_id == theirs._client._client_id == "cid"
    assert ours._client is ours._client


@pytest.mark.parametrize("group_id", [None, "g"])
@pytest.mark.parametrize("auto_commit", [True, False])
async def test_group_id_and_auto_commit_match_aiokafka(group_id: str | None, auto_commit: bool) -> None:
    kwargs: dict[str, Any] = {"group_id": group_id, "enable_auto_commit": auto_commit}
    ours = aiokafka_lead.AIOKafkaConsumer(**kwargs)
    theirs = aiokafka.AIOKafkaConsumer(**kwargs)
    assert ours._group_id == theirs._group_id == group_id
    assert ours._enable_auto_commit == theirs._enable_auto_commit == auto_commit
    with pytest.raises(AttributeError):
        ours._group_id = "other"  # type: ignore[misc]


async def test_subscription_topics_match_aiokafka() -> None:
    # without a group: aiokafka's unsubscribe() before start() needs no coordinator then
    ours = aiokafka_lead.AIOKafkaConsumer("a", "b")
    theirs = aiokafka.AIOKafkaConsumer("a", "b")
    seen: list[tuple[Any, Any]] = [(ours._subscription.topics, theirs._subscription.topics)]
    for consumer in (ours, theirs):
        consumer.subscribe(["c"])
    seen.append((ours._subscription.topics, theirs._subscription.topics))
    for consumer in (ours, theirs):
        consumer.unsubscribe()
    seen.append((ours._subscription.topics, theirs._subscription.topics))
    for consumer in (ours, theirs):
        consumer.subscribe(pattern="^x-")
    seen.append((ours._subscription.topics, theirs._subscription.topics))
    assert [set(o) for o, _ in seen] == [set(t) for _, t in seen]
    assert [set(o) for o, _ in seen] == [{"a", "b"}, {"c"}, set(), set()]


async def test_subscription_topics_after_assign_match_aiokafka() -> None:
    ours = aiokafka_lead.AIOKafkaConsumer()
    theirs = aiokafka.AIOKafkaConsumer()
    assert set(ours._subscription.topics) == set(theirs._subscription.topics) == set()
    ours.assign([TopicPartition("t", 0), TopicPartition("u", 1)])
    theirs.assign([aiokafka.TopicPartition("t", 0), aiokafka.TopicPartition("u", 1)])
    assert set(ours._subscription.topics) == set(theirs._subscription.topics) == {"t", "u"}


async def test_coordinator_is_none_without_a_group_and_has_a_member_id_with_one() -> None:
    assert aiokafka_lead.AIOKafkaConsumer()._coordinator is None
    member = aiokafka_lead.AIOKafkaConsumer(group_id="g")._coordinator
    assert member is not None
    assert isinstance(member.member_id, str)


async def test_consumer_closed_matches_aiokafka() -> None:
    ours = aiokafka_lead.AIOKafkaConsumer()
    theirs = aiokafka.AIOKafkaConsumer()
    assert ours._closed is theirs._closed is False
    await ours.stop()
    await theirs.stop()
    assert ours._closed is theirs._closed is True


@pytest.mark.parametrize("assignor", [KafkaPythonRoundRobin, AiokafkaRoundRobin])
async def test_foreign_assignor_classes_are_accepted_as_by_aiokafka(assignor: type) -> None:
    ours = aiokafka_lead.AIOKafkaConsumer(group_id="g", partition_assignment_strategy=(assignor,))
    theirs = aiokafka.AIOKafkaConsumer(group_id="g", partition_assignment_strategy=(assignor,))
    assert theirs._partition_assignment_strategy == (assignor,)
    assert ours._config.partition_assignment_strategy == (assignor,)


@pytest.mark.parametrize(
    ("assignor", "first", "second"),
    [(KafkaPythonRoundRobin, [0, 2], [1, 3]), (KafkaPythonRange, [0, 1], [2, 3])],
    ids=["roundrobin", "range"],
)
def test_kafka_python_assignors_run_as_the_leaders_assignor(
    assignor: type, first: list[int], second: list[int]
) -> None:
    adapter = resolve_assignors([assignor])[0]
    assert isinstance(adapter, AiokafkaAssignorAdapter)
    assert adapter.name == assignor.name
    members = {m: MemberSubscription(m, ("t",), group_instance_id=None) for m in ("m-a", "m-b")}
    plan = adapter.assign({"t": 4}, members)
    assert {m: [tp.partition for tp in tps] for m, tps in plan.items()} == {"m-a": first, "m-b": second}
