"""aiokafka's admin value types, abc module and IllegalOperation, against the installed aiokafka."""

from __future__ import annotations

import inspect
from typing import Any

import aiokafka.abc
import aiokafka.admin
import aiokafka.admin.config_resource
import aiokafka.errors
import anyio
import pytest

import aiokafka_lead.abc
import aiokafka_lead.admin
import aiokafka_lead.admin.config_resource
import aiokafka_lead.errors
from aiokafka_lead import AIOKafkaConsumer
from aiokafka_lead.consumer.group_common import ConsumerRebalanceListener
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.fake import FakeCluster

ATTRIBUTES = {
    "NewTopic": ("name", "num_partitions", "replication_factor", "replica_assignments", "topic_configs"),
    "NewPartitions": ("total_count", "new_assignments"),
    "RecordsToDelete": ("before_offset",),
}
CONSTRUCTIONS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("NewTopic", ("t", 3, 1), {}),
    ("NewTopic", ("t", 3, 1, None, {"cleanup.policy": "compact"}), {}),
    ("NewTopic", ("t", -1, -1), {"replica_assignments": {0: [1, 2]}}),
    ("NewTopic", (), {"name": "t", "num_partitions": 2, "replication_factor": 3, "topic_configs": None}),
    ("NewPartitions", (6,), {}),
    ("NewPartitions", (), {"total_count": 4, "new_assignments": [[1], [2]]}),
    ("RecordsToDelete", (10,), {}),
    ("RecordsToDelete", (), {"before_offset": -1}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), CONSTRUCTIONS)
def test_admin_values_constructed_as_aiokafka(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    theirs = getattr(aiokafka.admin, name)(*args, **kwargs)
    mine = getattr(aiokafka_lead.admin, name)(*args, **kwargs)
    for attribute in ATTRIBUTES[name]:
        assert getattr(mine, attribute) == getattr(theirs, attribute), attribute


def test_new_topic_rejects_counts_with_assignments_as_aiokafka() -> None:
    with pytest.raises(aiokafka.errors.IllegalArgumentError):
        aiokafka.admin.NewTopic("t", 3, 1, {0: [1]})
    with pytest.raises(aiokafka_lead.errors.IllegalArgumentError):
        aiokafka_lead.admin.NewTopic("t", 3, 1, {0: [1]})


@pytest.mark.parametrize(
    "args",
    [("topic", "t"), ("TOPIC", "t", {"retention.ms": "1"}), ("broker", "1"), ("Broker", "2", None)],
)
def test_config_resource_as_aiokafka(args: tuple[Any, ...]) -> None:
    theirs = aiokafka.admin.config_resource.ConfigResource(*args)
    mine = aiokafka_lead.admin.config_resource.ConfigResource(*args)
    assert (mine.resource_type, mine.name, mine.configs) == (
        theirs.resource_type,
        theirs.name,
        theirs.configs,
    )
    assert isinstance(mine.resource_type, aiokafka_lead.admin.config_resource.ConfigResourceType)
    enum_value = aiokafka_lead.admin.config_resource.ConfigResourceType[str(args[0]).upper()]
    assert aiokafka_lead.admin.config_resource.ConfigResource(enum_value, "x").resource_type is enum_value


def test_config_resource_type_members_include_aiokafka_ones() -> None:
    for member in aiokafka.admin.config_resource.ConfigResourceType:
        assert aiokafka_lead.admin.config_resource.ConfigResourceType[member.name] == member.value
    with pytest.raises(ValueError, match="unknown config resource type"):
        aiokafka_lead.admin.config_resource.ConfigResource("nope", "x")


def test_abc_module() -> None:
    assert aiokafka_lead.abc.ConsumerRebalanceListener is ConsumerRebalanceListener
    provider = aiokafka_lead.abc.AbstractTokenProvider
    assert provider.__abstractmethods__ == aiokafka.abc.AbstractTokenProvider.__abstractmethods__ == {"token"}
    assert inspect.iscoroutinefunction(provider.token)
    with pytest.raises(TypeError):
        provider()  # type: ignore[abstract]

    class Tokens(aiokafka_lead.abc.AbstractTokenProvider):
        async def token(self) -> str:
            return "t0k3n"

    assert Tokens().extensions() == {}
    assert anyio.run(Tokens().token) == "t0k3n"
    for method in ("on_partitions_revoked", "on_partitions_assigned"):
        assert callable(getattr(ConsumerRebalanceListener, method))


async def test_consumer_without_group_id_raises_illegal_operation() -> None:
    with anyio.fail_after(10):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1)
            tp = TopicPartition("t", 0)
            async with AIOKafkaConsumer(bootstrap_servers=fc.bootstrap) as consumer:
                consumer.assign([tp])
                with pytest.raises(aiokafka_lead.errors.IllegalOperation, match="group_id"):
                    await consumer.commit()
                with pytest.raises(aiokafka_lead.errors.IllegalOperation, match="group_id"):
                    await consumer.commit({tp: 1})
                with pytest.raises(aiokafka_lead.errors.IllegalOperation, match="group_id"):
                    await consumer.committed(tp)
                with pytest.raises(aiokafka_lead.errors.IllegalOperation, match="group_id"):
                    await consumer.seek_to_committed(tp)
            with pytest.raises(aiokafka_lead.errors.ConsumerStoppedError):
                await consumer.getone()
