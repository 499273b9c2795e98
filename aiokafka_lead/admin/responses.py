"""What aiokafka's admin client returns: its protocol responses, in aiokafka's shape.

aiokafka's ``AIOKafkaAdminClient`` hands back the decoded response of some requests
(``create_topics(...).topic_errors``, ``describe_configs(...)[0].resources``, ...). These
classes have the same attribute names, with the rows as tuples of the same fields in the
same order (named tuples: ``topic, code, message = row`` and ``row.error_code`` both
work), and ``to_object()`` as aiokafka's. The field sets are those of the request versions
aiokafka 0.14 negotiates with Kafka 4.x (CreateTopics v3, DeleteTopics v3,
CreatePartitions v1, DescribeConfigs v2, AlterConfigs v1, DescribeGroups v2 fields).
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, NamedTuple


def _plain(value: Any) -> Any:
    """``to_object()``: rows (named tuples) as dicts, recursively."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class AdminResponse:
    """A response in aiokafka's shape: ``FIELDS`` as attributes, in order.

    Every response starts with ``throttle_time_ms``; a subclass declares its other fields
    as annotations and its request's key and version as class keywords.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ()
    API_KEY: ClassVar[int]
    API_VERSION: ClassVar[int]
    throttle_time_ms: int

    def __init_subclass__(cls, *, api_key: int, api_version: int, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.API_KEY, cls.API_VERSION = api_key, api_version
        cls.FIELDS = ("throttle_time_ms", *inspect.get_annotations(cls))

    def __init__(self, *values: Any) -> None:
        if len(values) != len(self.FIELDS):
            raise TypeError(f"{type(self).__name__} takes {len(self.FIELDS)} values, not {len(values)}")
        for name, value in zip(self.FIELDS, values, strict=True):
            setattr(self, name, value)

    def to_object(self) -> dict[str, Any]:
        return {name: _plain(getattr(self, name)) for name in self.FIELDS}

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, like aiokafka's

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__name__}({inner})"


class TopicError(NamedTuple):
    topic: str
    error_code: int
    error_message: str | None


class TopicErrorCode(NamedTuple):
    topic: str
    error_code: int


class ConfigSynonym(NamedTuple):
    config_name: str
    config_value: str | None
    config_source: int


class DescribedConfig(NamedTuple):
    config_names: str  # aiokafka's field name
    config_value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool
    config_synonyms: list[ConfigSynonym]


class DescribedResource(NamedTuple):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    config_entries: list[DescribedConfig]


class AlteredResource(NamedTuple):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str


class GroupMember(NamedTuple):
    member_id: str
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class DescribedGroup(NamedTuple):
    error_code: int
    group: str
    state: str
    protocol_type: str
    protocol: str
    members: list[GroupMember]


class CreateTopicsResponse(AdminResponse, api_key=19, api_version=3):
    topic_errors: list[TopicError]


class DeleteTopicsResponse(AdminResponse, api_key=20, api_version=3):
    topic_error_codes: list[TopicErrorCode]


class CreatePartitionsResponse(AdminResponse, api_key=37, api_version=1):
    topic_errors: list[TopicError]


class DescribeConfigsResponse(AdminResponse, api_key=32, api_version=2):
    resources: list[DescribedResource]


class AlterConfigsResponse(AdminResponse, api_key=33, api_version=1):
    resources: list[AlteredResource]


class DescribeGroupsResponse(AdminResponse, api_key=15, api_version=2):
    groups: list[DescribedGroup]
