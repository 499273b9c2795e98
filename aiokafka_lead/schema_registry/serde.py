"""What the Avro, Protobuf and JSON Schema serializers share: subjects, registration, framing.

A serializer is an async callable ``await serializer(value, topic, headers)`` returning the
framed bytes (``None`` for ``None``); with header framing it appends the schema-id header to
``headers``, a list. A deserializer is ``await deserializer(data, topic, headers)``: it reads
the schema id from the record's schema-id header when there is one, else from the payload's
prefix (as Confluent's deserializers do), fetches the writer's schema once, and decodes.
The work per record once a topic's schema is known is a dictionary look-up, the encoding or
decoding, and joining the prefix.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from aiokafka_lead.schema_registry.client import RegisteredSchema, Schema, SchemaRegistryClient
from aiokafka_lead.schema_registry.errors import SerializationError
from aiokafka_lead.schema_registry.wire import (
    SchemaRef,
    find_schema_header,
    guid_header_value,
    id_prefix,
    read_framing,
    schema_id_header,
)

Headers = MutableSequence[tuple[str, bytes | None]]
#: (topic, is_key, record name of the schema or None) -> subject
SubjectNameStrategy = Callable[[str, bool, str | None], str]
Framing = Literal["prefix", "header"]


def topic_name_strategy(topic: str, is_key: bool, record_name: str | None) -> str:
    """``<topic>-key`` / ``<topic>-value``: one schema (and its evolution) per topic."""
    return f"{topic}-key" if is_key else f"{topic}-value"


def record_name_strategy(topic: str, is_key: bool, record_name: str | None) -> str:
    """The record's full name: one subject per record type, across topics."""
    if not record_name:
        raise SerializationError(
            "record_name_strategy needs a named schema (an Avro record, a message, a title)"
        )
    return record_name


def topic_record_name_strategy(topic: str, is_key: bool, record_name: str | None) -> str:
    """``<topic>-<record full name>``: several record types in one topic."""
    return f"{topic}-{record_name_strategy(topic, is_key, record_name)}"


@dataclass(frozen=True, slots=True)
class _Target:
    """How one topic's values are written: the encoder, then the prefix or the header."""

    encode: Callable[[Any], bytes]
    prefix: bytes
    header: tuple[str, bytes] | None


async def referenced_schemas(client: SchemaRegistryClient, schema: Schema) -> list[tuple[str, Schema]]:
    """The schemas ``schema`` references, transitively, each after the ones it references:
    ``(name the reference uses, schema)``."""
    found: list[tuple[str, Schema]] = []
    seen: set[tuple[str, int]] = set()

    async def walk(current: Schema) -> None:
        for ref in current.references:
            if (ref.subject, ref.version) in seen:
                continue
            seen.add((ref.subject, ref.version))
            registered = await client.get_version(ref.subject, ref.version)
            await walk(registered.schema)
            found.append((ref.name, registered.schema))

    await walk(schema)
    return found


class SchemaSerializer(ABC):
    """The base of the serializers: ``framing="prefix"`` (magic 0 + id) or ``"header"``
    (``__key_schema_id``/``__value_schema_id`` = magic 1 + GUID).

    ``auto_register_schemas`` registers the schema under the subject (else it must be
    registered already: NotFoundError otherwise); ``use_latest_version`` writes with the
    subject's latest schema instead (asked once per topic); ``normalize_schemas`` asks the
    registry to normalize the schema before it compares or stores it.
    """

    schema_type: ClassVar[str]

    def __init__(
        self,
        client: SchemaRegistryClient,
        *,
        is_key: bool = False,
        subject_name_strategy: SubjectNameStrategy = topic_name_strategy,
        auto_register_schemas: bool = True,
        use_latest_version: bool = False,
        normalize_schemas: bool = False,
        framing: Framing = "prefix",
    ) -> None:
        if framing not in {"prefix", "header"}:
            raise ValueError(f"framing must be 'prefix' or 'header', not {framing!r}")
        if use_latest_version and auto_register_schemas:
            raise ValueError("use_latest_version=True needs auto_register_schemas=False")
        self.client = client
        self.is_key = is_key
        self.subject_name_strategy = subject_name_strategy
        self.auto_register_schemas = auto_register_schemas
        self.use_latest_version = use_latest_version
        self.normalize_schemas = normalize_schemas
        self.framing = framing
        self._targets: dict[str, _Target] = {}
        self._lock = asyncio.Lock()

    # -- what each format says (set by the subclass's constructor) ------------------------

    #: the schema values are written with (before Protobuf's references are registered)
    schema: Schema
    #: the name the record strategies use
    record_name: str | None
    #: Protobuf's message indexes (None: the format has none)
    message_indexes: tuple[int, ...] | None = None

    async def prepare_schema(self, subject: str) -> Schema:
        """The schema to register or look up (Protobuf registers its imports first)."""
        return self.schema

    @abstractmethod
    async def encoder(self, registered: RegisteredSchema) -> Callable[[Any], bytes]:
        """The function that encodes one value for the schema as registered."""

    # -- per record -----------------------------------------------------------------------

    async def __call__(self, value: Any, topic: str, headers: Headers | None = None) -> bytes | None:
        if value is None:
            return None
        target = self._targets.get(topic)
        if target is None:
            target = await self._target(topic)
        try:
            payload = target.encode(value)
        except SerializationError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
            raise SerializationError(
                f"cannot encode a {type(value).__name__} with the schema of {topic}: {exc}"
            ) from exc
        if target.header is None:
            return target.prefix + payload
        if headers is None:
            raise SerializationError("header framing appends a header: pass the record's header list")
        headers.append(target.header)
        return payload

    async def _target(self, topic: str) -> _Target:
        async with self._lock:
            if (target := self._targets.get(topic)) is not None:
                return target
            subject = self.subject_name_strategy(topic, self.is_key, self.record_name)
            if self.use_latest_version:
                registered = await self.client.get_latest_version(subject)
            else:
                schema = await self.prepare_schema(subject)
                if self.auto_register_schemas:
                    registered = await self.client.register_schema(subject, schema, self.normalize_schemas)
                else:
                    registered = await self.client.lookup_schema(subject, schema, self.normalize_schemas)
            header = None
            prefix = b""
            if self.framing == "prefix":
                prefix = id_prefix(registered.schema_id, self.message_indexes)
            else:
                guid = registered.guid or await self.client.get_guid(registered.schema_id)
                if guid is None:
                    raise SerializationError(
                        f"the registry at {self.client.url} gives schemas no GUID: use framing='prefix'"
                    )
                header = (schema_id_header(self.is_key), guid_header_value(guid, self.message_indexes))
            target = _Target(await self.encoder(registered), prefix, header)
            self._targets[topic] = target
            return target


class SchemaDeserializer(ABC):
    """The base of the deserializers: reads either framing, fetches each writer schema once."""

    #: Protobuf payloads carry message indexes after the id
    with_indexes: ClassVar[bool] = False
    #: the ``format`` to ask the registry for (Protobuf: ``serialized``)
    schema_format: ClassVar[str | None] = None

    def __init__(self, client: SchemaRegistryClient, *, is_key: bool = False) -> None:
        self.client = client
        self.is_key = is_key
        self._decoders: dict[SchemaRef, Callable[[memoryview], Any]] = {}

    @abstractmethod
    async def decoder(self, ref: SchemaRef) -> Callable[[memoryview], Any]:
        """The function that decodes a payload written with the schema ``ref`` names."""

    async def writer_schema(self, ref: SchemaRef) -> Schema:
        if ref.id is not None:
            return await self.client.get_schema(ref.id, self.schema_format)
        assert ref.guid is not None
        return await self.client.get_schema_by_guid(ref.guid, self.schema_format)

    async def __call__(
        self, data: bytes | None, topic: str, headers: Sequence[tuple[str, bytes | None]] | None = None
    ) -> Any:
        if data is None:
            return None
        field = "key" if self.is_key else "value"
        header = find_schema_header(headers, self.is_key)
        if header is not None:
            what = f"the {field} schema-id header of a record from {topic}"
            ref, _ = read_framing(header, what, self.with_indexes)
            start = 0
        else:
            ref, start = read_framing(data, f"the {field} of a record from {topic}", self.with_indexes)
        decode = self._decoders.get(ref)
        if decode is None:
            decode = self._decoders[ref] = await self.decoder(ref)
        try:
            return decode(memoryview(data)[start:])
        except SerializationError:
            raise
        except Exception as exc:
            raise SerializationError(
                f"cannot decode the {field} of a record from {topic} "
                f"with schema {ref.id or ref.guid}: {exc!r}"
            ) from exc
