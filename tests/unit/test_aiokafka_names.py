"""Every public name of the installed aiokafka exists at the same path in aiokafka_lead.

A module's public names: its ``__all__`` plus every class, function and other object
defined in that module itself (``obj.__module__`` is the module). Names a module only
imports from elsewhere are public there only through ``__all__`` (PEP 8): the package
``__init__`` modules re-export that way, while e.g. ``aiokafka.producer.producer``
importing ``Sender`` is an implementation detail. ``aiokafka.errors`` has an ``__all__``
that omits some of its classes (``IllegalOperation``, ``ProducerFenced``, ...): those
count too, since they are defined there.

The names aiokafka_lead does not provide are listed in ``EXCEPTIONS`` with the reason,
and the same list is in docs/migrating.md.
"""

from __future__ import annotations

import importlib
import re
import types
from pathlib import Path

import aiokafka
import pytest

#: aiokafka's public modules: its packages, the modules its API docs (docs/api.rst) name,
#: and those a custom assignor imports from (``coordinator.protocol``)
PUBLIC_MODULES = [
    "aiokafka",
    "aiokafka.abc",
    "aiokafka.admin",
    "aiokafka.admin.client",
    "aiokafka.admin.config_resource",
    "aiokafka.admin.new_partitions",
    "aiokafka.admin.new_topic",
    "aiokafka.admin.records_to_delete",
    "aiokafka.consumer",
    "aiokafka.consumer.consumer",
    "aiokafka.coordinator.assignors",
    "aiokafka.coordinator.assignors.abstract",
    "aiokafka.coordinator.assignors.range",
    "aiokafka.coordinator.assignors.roundrobin",
    "aiokafka.coordinator.assignors.sticky",
    "aiokafka.coordinator.assignors.sticky.sticky_assignor",
    "aiokafka.coordinator.protocol",
    "aiokafka.errors",
    "aiokafka.helpers",
    "aiokafka.partitioner",
    "aiokafka.producer",
    "aiokafka.producer.producer",
    "aiokafka.structs",
]
#: modules of which the API docs name only some objects
DOCUMENTED_ONLY = {
    "aiokafka.producer.message_accumulator": ["BatchBuilder"],
    "aiokafka.consumer.group_coordinator": ["GroupCoordinator"],
    "aiokafka.protocol.produce": ["ProduceRequest"],
}

_STICKY = "aiokafka.coordinator.assignors.sticky.sticky_assignor"
_STICKY_INTERNAL = (
    "internal to aiokafka's sticky algorithm; aiokafka_lead's StickyPartitionAssignor computes "
    "its assignment with its own code, and the user data it exchanges "
    "(StickyAssignorUserDataV1) is provided"
)
#: "aiokafka.path.Name" -> why aiokafka_lead does not have it (also in docs/migrating.md)
EXCEPTIONS = {
    "aiokafka.AIOKafkaClient": (
        "aiokafka's low-level client (connections, metadata, raw requests) that its producer, "
        "consumer and admin client share; aiokafka_lead's clients share a different core "
        "(aiokafka_lead.core.client.ClientCore) with another interface, so an AIOKafkaClient of the "
        "same behaviour would be a second client implementation"
    ),
    "aiokafka.consumer.group_coordinator.GroupCoordinator": (
        "the consumer's internal group membership, documented only as a reference; never "
        "constructed by users. aiokafka_lead's is aiokafka_lead.consumer.coordinator.GroupCoordinator "
        "with a different constructor"
    ),
    "aiokafka.protocol.produce.ProduceRequest": (
        "aiokafka's hand-written protocol classes; aiokafka_lead's wire classes are generated "
        "from Kafka's message specs (aiokafka_lead.protocol.messages.ProduceRequest) and have "
        "other constructors and versions"
    ),
    f"{_STICKY}.StickyAssignmentExecutor": _STICKY_INTERNAL,
    f"{_STICKY}.ConsumerSubscription": _STICKY_INTERNAL,
    f"{_STICKY}.has_identical_list_elements": _STICKY_INTERNAL,
    f"{_STICKY}.partitions_comparator_key": _STICKY_INTERNAL,
    f"{_STICKY}.remove_if_present": _STICKY_INTERNAL,
    f"{_STICKY}.subscriptions_comparator_key": _STICKY_INTERNAL,
}

MIGRATING = Path(__file__).resolve().parents[2] / "docs" / "migrating.md"
SECTION = "Names aiokafka has that aiokafka_lead does not"


def public_names(module_name: str) -> set[str]:
    module = importlib.import_module(module_name)
    names = set(getattr(module, "__all__", ()))
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        if getattr(value, "__module__", None) == module_name:
            names.add(name)
    return names


def all_public_names() -> list[str]:
    out = [f"{m}.{n}" for m in PUBLIC_MODULES for n in sorted(public_names(m))]
    out += [f"{m}.{n}" for m, names in DOCUMENTED_ONLY.items() for n in names]
    return out


def ours(path: str) -> object | None:
    """The object at aiokafka_lead's twin of the aiokafka path ``path``, or None."""
    module_name, _, name = path.rpartition(".")
    try:
        module = importlib.import_module("aiokafka_lead" + module_name[len("aiokafka") :])
    except ImportError:
        return None
    return getattr(module, name, None)


def test_aiokafka_is_the_version_we_match() -> None:
    assert aiokafka.__version__.startswith("0.14.")


def test_the_walk_sees_aiokafka_public_api() -> None:
    names = set(all_public_names())
    # spot checks that the walker finds what aiokafka documents (not an empty walk)
    for expected in (
        "aiokafka.AIOKafkaConsumer",
        "aiokafka.errors.IllegalOperation",
        "aiokafka.errors.ProducerFenced",
        "aiokafka.structs.OffsetAndTimestamp",
        "aiokafka.abc.AbstractTokenProvider",
        "aiokafka.helpers.create_ssl_context",
        "aiokafka.admin.records_to_delete.RecordsToDelete",
        "aiokafka.coordinator.assignors.sticky.sticky_assignor.StickyPartitionAssignor",
        "aiokafka.producer.message_accumulator.BatchBuilder",
    ):
        assert expected in names
    # re-exported stdlib / typing names and imported internals are not counted
    assert "aiokafka.helpers.SSLContext" not in names
    assert "aiokafka.producer.producer.Sender" not in names
    assert len(names) > 150


def test_every_public_name_of_aiokafka_exists_in_aiokafka_lead() -> None:
    missing = [path for path in all_public_names() if ours(path) is None and path not in EXCEPTIONS]
    assert missing == []


@pytest.mark.parametrize(
    "module_name", [m for m in PUBLIC_MODULES if hasattr(importlib.import_module(m), "__all__")]
)
def test_star_imports_give_aiokafka_names(module_name: str) -> None:
    """``from aiokafka_lead.x import *`` brings every name ``from aiokafka.x import *`` does."""
    theirs = set(importlib.import_module(module_name).__all__)
    mine = set(importlib.import_module("aiokafka_lead" + module_name[len("aiokafka") :]).__all__)
    assert sorted(name for name in theirs - mine if f"{module_name}.{name}" not in EXCEPTIONS) == []


def test_every_exception_is_really_missing_and_still_in_aiokafka() -> None:
    names = set(all_public_names())
    assert sorted(set(EXCEPTIONS) - names) == []
    assert sorted(path for path in EXCEPTIONS if ours(path) is not None) == []


def test_the_exceptions_are_listed_in_the_migration_guide() -> None:
    text = MIGRATING.read_text()
    assert f"## {SECTION}" in text
    section = text.split(f"## {SECTION}", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- `([\w.]+)`", section, re.MULTILINE))
    assert listed == set(EXCEPTIONS)


@pytest.mark.parametrize(
    "path",
    [
        "aiokafka.ConsumerRebalanceListener",
        "aiokafka.abc.ConsumerRebalanceListener",
        "aiokafka.ConsumerStoppedError",
        "aiokafka.IllegalOperation",
        "aiokafka.OffsetAndTimestamp",
        "aiokafka.admin.NewTopic",
        "aiokafka.admin.RecordsToDelete",
        "aiokafka.producer.AIOKafkaProducer",
        "aiokafka.consumer.AIOKafkaConsumer",
    ],
)
def test_one_class_per_name_across_paths(path: str) -> None:
    """The same object wherever aiokafka re-exports it (no copies)."""
    obj = ours(path)
    canonical = {
        "ConsumerRebalanceListener": "aiokafka.abc.ConsumerRebalanceListener",
        "ConsumerStoppedError": "aiokafka.errors.ConsumerStoppedError",
        "IllegalOperation": "aiokafka.errors.IllegalOperation",
        "OffsetAndTimestamp": "aiokafka.structs.OffsetAndTimestamp",
        "NewTopic": "aiokafka.admin.new_topic.NewTopic",
        "RecordsToDelete": "aiokafka.admin.records_to_delete.RecordsToDelete",
        "AIOKafkaProducer": "aiokafka.producer.producer.AIOKafkaProducer",
        "AIOKafkaConsumer": "aiokafka.consumer.consumer.AIOKafkaConsumer",
    }[path.rpartition(".")[2]]
    assert obj is not None and obj is ours(canonical)


#: code written against aiokafka's public names, one import per public module at least
SAMPLE = """
from aiokafka import (
    AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, ConsumerRecord,
    ConsumerStoppedError, IllegalOperation, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition,
)
from aiokafka.abc import AbstractTokenProvider, ConsumerRebalanceListener as Listener
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.client import AIOKafkaAdminClient as AdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.admin.new_partitions import NewPartitions as NP
from aiokafka.admin.new_topic import NewTopic as NT
from aiokafka.admin.records_to_delete import RecordsToDelete as RTD
from aiokafka.consumer import AIOKafkaConsumer as Consumer
from aiokafka.consumer.consumer import AIOKafkaConsumer as Consumer2
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocol, ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata,
)
from aiokafka.errors import (
    BrokerResponseError, CommitFailedError, ConsumerStoppedError as Stopped, CorruptRecordException,
    GroupCoordinatorNotAvailableError, IllegalOperation as Illegal, IllegalStateError,
    KafkaConnectionError, KafkaError, KafkaTimeoutError, LeaderNotAvailableError,
    MessageSizeTooLargeError, NoBrokersAvailable, NoOffsetForPartitionError,
    NotLeaderForPartitionError, OffsetOutOfRangeError, ProducerClosed, ProducerFenced,
    RecordTooLargeError, TopicAlreadyExistsError, TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError, UnsupportedVersionError, for_code,
)
from aiokafka.helpers import create_ssl_context
from aiokafka.partitioner import DefaultPartitioner, murmur2
from aiokafka.producer import AIOKafkaProducer as Producer
from aiokafka.producer.message_accumulator import BatchBuilder
from aiokafka.producer.producer import AIOKafkaProducer as Producer2
from aiokafka.structs import (
    BrokerMetadata, ConsumerRecord as Record, OffsetAndMetadata as OAM, OffsetAndTimestamp as OAT,
    PartitionMetadata, RecordMetadata, TopicPartition as TP,
)
import aiokafka.errors as Errors


class MyAssignor(AbstractPartitionAssignor):
    name = "mine"

    @classmethod
    def assign(cls, cluster, members):
        return {m: ConsumerProtocolMemberAssignment(0, [], b"") for m in members}

    @classmethod
    def metadata(cls, topics):
        return ConsumerProtocolMemberMetadata(0, list(topics), b"")

    @classmethod
    def on_assignment(cls, assignment):
        pass


class MyListener(ConsumerRebalanceListener):
    async def on_partitions_revoked(self, revoked):
        pass

    async def on_partitions_assigned(self, assigned):
        pass


RESULT = (
    TopicPartition("t", 0),
    OffsetAndTimestamp(5, 1000),
    NewTopic("t", 3, 1).name,
    ConfigResource("topic", "t").resource_type,
    RecordsToDelete(10).before_offset,
    murmur2(b"key"),
    for_code(3) is UnknownTopicOrPartitionError,
    issubclass(Errors.ProducerFenced, KafkaError),
    MyAssignor.name,
    MyListener(),
)
"""


def _run(source: str) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "sample"}
    exec(compile(source, "<sample>", "exec"), namespace)
    return namespace


def test_aiokafka_code_imports_after_renaming_the_package() -> None:
    original = _run(SAMPLE)  # the sample is valid aiokafka code
    rewritten = SAMPLE.replace("aiokafka", "aiokafka_lead")
    assert "import aiokafka." not in rewritten and "from aiokafka." not in rewritten
    ported = _run(rewritten)
    assert repr(original["RESULT"][:8]) == repr(ported["RESULT"][:8])
    assert ported["MyAssignor"].name == "mine"  # type: ignore[attr-defined]
