"""Scenarios for the admin APIs (see ``scenarios.py`` for the contract), on the scripted
admin broker of :mod:`tests.support.admin_broker`: the admin client makes one call through
the lie (``times=1``, or every answer for ``None``), records its ``KafkaError``, and after
the lie the same client makes a healthy call whose result is checked.

A call through a lie that returns must still answer for everything it was asked about (a
result that leaves out the asked topic, resource, partition or group is a false success);
what the values are the client cannot know, so they are checked on the healthy call only."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka_lead.admin import (
    AdminClient,
    AIOKafkaAdminClient,
    ConfigResource,
    ConfigResourceType,
    ElectionType,
    NewPartitions,
    NewTopic,
)
from aiokafka_lead.structs import TopicPartition
from tests.support.admin_broker import AdminBroker, admin_broker
from tests.unit.hostile.harness import REQUEST_TIMEOUT_MS, Report, case_rules, through

FIND_COORDINATOR, DESCRIBE_GROUPS, LIST_GROUPS, CREATE_TOPICS, DELETE_TOPICS = 10, 15, 16, 19, 20
DELETE_RECORDS, DESCRIBE_CONFIGS, ALTER_CONFIGS, CREATE_PARTITIONS, DELETE_GROUPS = 21, 32, 33, 37, 42
ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CLUSTER, CONSUMER_GROUP_DESCRIBE = 43, 44, 60, 69
TP = TopicPartition("t", 0)
TIMEOUT_MS = 2 * REQUEST_TIMEOUT_MS

Call = Callable[[Any, AdminBroker], Awaitable[Any]]


def _scenario(api: int, lied: Call, healthy: Call, *, flavour: type[Any] = AdminClient, **state: Any) -> Any:
    async def scenario(action: Any, times: int | None = 1) -> Report:
        report = Report()
        fresh = {name: copy.copy(value) for name, value in state.items()}  # each case starts anew
        async with (
            case_rules(),
            admin_broker(**fresh) as broker,
            flavour(
                bootstrap_servers=f"127.0.0.1:{broker.port}",
                request_timeout_ms=REQUEST_TIMEOUT_MS,
                retry_backoff_ms=10,
                retry_backoff_max_ms=50,
            ) as admin,
        ):
            broker.lie(api, action, times)
            await through(lied(admin, broker), report)
            broker.truth(api)
            await healthy(admin, broker)
        return report

    return scenario


async def _created(admin: Any, broker: AdminBroker) -> None:
    await admin.create_topics([NewTopic("n2", 1, 1)], timeout_ms=TIMEOUT_MS)
    assert broker.topics["n2"] == 1


async def _deleted(admin: Any, broker: AdminBroker) -> None:
    await admin.delete_topics(["d2"], timeout_ms=TIMEOUT_MS)
    assert "d2" not in broker.topics


async def _partitions_created(admin: Any, broker: AdminBroker) -> None:
    await admin.create_partitions({"u": NewPartitions(3)}, timeout_ms=TIMEOUT_MS)
    assert broker.topics["u"] == 3


async def _configs_of_t(admin: Any, broker: AdminBroker) -> dict[str, Any]:
    configs = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "t")])
    assert set(configs) == {(int(ConfigResourceType.TOPIC), "t")}, f"a result for another resource: {configs}"
    return dict(configs[(int(ConfigResourceType.TOPIC), "t")])


async def _configs(admin: Any, broker: AdminBroker) -> None:
    assert (await _configs_of_t(admin, broker))["retention.ms"].value == "604800000"


def _alter(admin: Any, broker: AdminBroker) -> Awaitable[Any]:
    return admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "t", {"retention.ms": "1000"})])


async def _election(admin: Any, broker: AdminBroker) -> Any:
    results = await admin.elect_leaders(ElectionType.PREFERRED, [TP])
    assert set(results) == {TP}, f"results for other partitions: {results}"
    return results[TP]


async def _elected(admin: Any, broker: AdminBroker) -> None:
    assert (await _election(admin, broker)).ok


async def _description(admin: Any, broker: AdminBroker) -> Any:
    groups = await admin.describe_consumer_groups(["g"])
    assert [g.group_id for g in groups] == ["g"], f"not a description of group g: {groups}"
    return groups[0]


async def _described(admin: Any, broker: AdminBroker) -> None:
    group = await _description(admin, broker)
    assert group.state == "Stable" and len(group.members) == 1


async def _listed(admin: Any, broker: AdminBroker) -> None:
    assert [g.group_id for g in await admin.list_consumer_groups()] == ["g"]


async def _groups_deleted(admin: Any, broker: AdminBroker) -> None:
    await admin.delete_consumer_groups(["h"])
    assert "h" not in broker.groups


async def _share_groups_deleted(admin: Any, broker: AdminBroker) -> None:
    await admin.delete_share_groups(["h"])
    assert "h" not in broker.groups


async def _low_watermarks(admin: Any, broker: AdminBroker) -> dict[TopicPartition, int]:
    marks: dict[TopicPartition, int] = await admin.delete_records({TP: 5})
    assert set(marks) == {TP}, f"low watermarks of other partitions: {marks}"
    return marks


async def _records_deleted(admin: Any, broker: AdminBroker) -> None:
    assert await _low_watermarks(admin, broker) == {TP: 5}


async def _cluster(admin: Any, broker: AdminBroker) -> None:
    cluster = await admin.describe_cluster()
    assert cluster.cluster_id == "hostile" and cluster.controller_id == 1


ADMIN_SCENARIOS: dict[str, tuple[int, Any]] = {
    "CreateTopics": (
        CREATE_TOPICS,
        _scenario(
            CREATE_TOPICS,
            lambda a, b: a.create_topics([NewTopic("n1", 1, 1)], timeout_ms=TIMEOUT_MS),
            _created,
        ),
    ),
    "DeleteTopics": (
        DELETE_TOPICS,
        _scenario(
            DELETE_TOPICS,
            lambda a, b: a.delete_topics(["d1"], timeout_ms=TIMEOUT_MS),
            _deleted,
            topics={"t": 1, "d1": 1, "d2": 1},
        ),
    ),
    "CreatePartitions": (
        CREATE_PARTITIONS,
        _scenario(
            CREATE_PARTITIONS,
            lambda a, b: a.create_partitions({"t": NewPartitions(2)}, timeout_ms=TIMEOUT_MS),
            _partitions_created,
            topics={"t": 1, "u": 1},
        ),
    ),
    "DescribeConfigs": (DESCRIBE_CONFIGS, _scenario(DESCRIBE_CONFIGS, _configs_of_t, _configs)),
    "IncrementalAlterConfigs": (
        INCREMENTAL_ALTER_CONFIGS,
        _scenario(INCREMENTAL_ALTER_CONFIGS, _alter, _alter),
    ),
    "AlterConfigs": (ALTER_CONFIGS, _scenario(ALTER_CONFIGS, _alter, _alter, flavour=AIOKafkaAdminClient)),
    "ElectLeaders": (ELECT_LEADERS, _scenario(ELECT_LEADERS, _election, _elected)),
    "FindCoordinator(admin)": (FIND_COORDINATOR, _scenario(FIND_COORDINATOR, _description, _described)),
    "ConsumerGroupDescribe": (
        CONSUMER_GROUP_DESCRIBE,
        _scenario(CONSUMER_GROUP_DESCRIBE, _description, _described),
    ),
    "DescribeGroups": (DESCRIBE_GROUPS, _scenario(DESCRIBE_GROUPS, _description, _described)),
    "ListGroups": (LIST_GROUPS, _scenario(LIST_GROUPS, lambda a, b: a.list_consumer_groups(), _listed)),
    "DeleteGroups": (
        DELETE_GROUPS,
        _scenario(
            DELETE_GROUPS, lambda a, b: a.delete_consumer_groups(["g"]), _groups_deleted, groups={"g", "h"}
        ),
    ),
    "DeleteGroups(share)": (
        DELETE_GROUPS,
        _scenario(
            DELETE_GROUPS, lambda a, b: a.delete_share_groups(["g"]), _share_groups_deleted, groups={"g", "h"}
        ),
    ),
    "DeleteRecords": (DELETE_RECORDS, _scenario(DELETE_RECORDS, _low_watermarks, _records_deleted)),
    "DescribeCluster": (
        DESCRIBE_CLUSTER,
        _scenario(DESCRIBE_CLUSTER, lambda a, b: a.describe_cluster(), _cluster),
    ),
}
