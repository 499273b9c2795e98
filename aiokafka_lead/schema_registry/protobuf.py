"""Protobuf serializer and deserializer (the ``protobuf`` extra).

A message class's file is registered as its serialized ``FileDescriptorProto`` in base64 (as
Confluent's Python serializer registers it), after the files it imports, each under its file
name as subject (Confluent's reference subject name strategy); Google's well-known types are
not registered. Payloads carry the message indexes of the class within its file. Reading
without a message class builds one from the registered descriptors, references included.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf.descriptor import Descriptor, FileDescriptor
    from google.protobuf.message import Message
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("Protobuf serdes need protobuf: pip install 'aiokafka_lead[protobuf]'") from exc

from aiokafka_lead.schema_registry.client import (
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
)
from aiokafka_lead.schema_registry.errors import SerializationError
from aiokafka_lead.schema_registry.serde import SchemaDeserializer, SchemaSerializer, referenced_schemas
from aiokafka_lead.schema_registry.wire import SchemaRef

WELL_KNOWN_PREFIX = "google/protobuf/"


def message_indexes(descriptor: Descriptor) -> tuple[int, ...]:
    """The path to ``descriptor`` from its file's top-level messages."""
    path: list[int] = []
    current = descriptor
    while current.containing_type is not None:
        parent = current.containing_type
        path.append(list(parent.nested_types).index(current))
        current = parent
    path.append(list(current.file.message_types_by_name.values()).index(current))
    return tuple(reversed(path))


def descriptor_schema(file: FileDescriptor) -> str:
    return base64.standard_b64encode(file.serialized_pb).decode("ascii")


def _file_proto(schema: Schema) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    try:
        proto.ParseFromString(base64.standard_b64decode(schema.schema_str.encode("ascii")))
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise SerializationError(
            "the registry's Protobuf schema is not a serialized descriptor (asked with format=serialized)"
        ) from exc
    return proto


class ProtobufSerializer(SchemaSerializer):
    """``ProtobufSerializer(client, MessageClass)``: writes instances of that generated class.
    ``skip_known_types`` (default True) leaves Google's well-known types unregistered."""

    schema_type = "PROTOBUF"

    def __init__(
        self,
        client: SchemaRegistryClient,
        message_type: type[Message],
        *,
        skip_known_types: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(client, **options)
        self._type = message_type
        self._file: FileDescriptor = message_type.DESCRIPTOR.file
        self.message_indexes = message_indexes(message_type.DESCRIPTOR)
        self.record_name = str(message_type.DESCRIPTOR.full_name)
        self._skip_known = skip_known_types
        self.schema = Schema(descriptor_schema(self._file), "PROTOBUF")

    async def _references(self, file: FileDescriptor) -> tuple[SchemaReference, ...]:
        refs = []
        for dependency in file.dependencies:
            if self._skip_known and dependency.name.startswith(WELL_KNOWN_PREFIX):
                continue
            schema = Schema(descriptor_schema(dependency), "PROTOBUF", await self._references(dependency))
            if self.auto_register_schemas:
                await self.client.register_schema(dependency.name, schema, self.normalize_schemas)
            registered = await self.client.lookup_schema(dependency.name, schema, self.normalize_schemas)
            refs.append(SchemaReference(dependency.name, dependency.name, registered.version or 1))
        return tuple(refs)

    async def prepare_schema(self, subject: str) -> Schema:
        return Schema(self.schema.schema_str, "PROTOBUF", await self._references(self._file))

    async def encoder(self, registered: RegisteredSchema) -> Callable[[Any], bytes]:
        message_type = self._type

        def encode(value: Any) -> bytes:
            if not isinstance(value, message_type):
                raise SerializationError(f"expected a {message_type.__name__}, got a {type(value).__name__}")
            return bytes(value.SerializeToString())

        return encode


class ProtobufDeserializer(SchemaDeserializer):
    """Decodes into ``message_type`` when given, else into a class built from the writer's
    registered descriptors (references included), chosen by the payload's message indexes."""

    with_indexes = True
    schema_format = "serialized"

    def __init__(
        self, client: SchemaRegistryClient, message_type: type[Message] | None = None, *, is_key: bool = False
    ) -> None:
        super().__init__(client, is_key=is_key)
        self._type = message_type

    async def decoder(self, ref: SchemaRef) -> Callable[[memoryview], Any]:
        message_type = self._type or await self._registered_type(ref)
        return lambda payload: message_type.FromString(bytes(payload))

    async def _registered_type(self, ref: SchemaRef) -> type[Message]:
        schema = await self.writer_schema(ref)
        pool = descriptor_pool.DescriptorPool()
        protos = [_file_proto(referenced) for _, referenced in await referenced_schemas(self.client, schema)]
        proto = _file_proto(schema)
        for each in [*protos, proto]:
            for dependency in each.dependency:
                if dependency.startswith(WELL_KNOWN_PREFIX) and not pool_has(pool, dependency):
                    known = descriptor_pool.Default().FindFileByName(dependency)
                    pool.AddSerializedFile(known.serialized_pb)
            if not pool_has(pool, each.name):
                pool.Add(each)
        file = pool.FindFileByName(proto.name)
        indexes = ref.message_indexes or (0,)
        try:
            descriptor = list(file.message_types_by_name.values())[indexes[0]]
            for index in indexes[1:]:
                descriptor = descriptor.nested_types[index]
        except IndexError:
            raise SerializationError(
                f"message indexes {list(indexes)} name no message of {proto.name}"
            ) from None
        return message_factory.GetMessageClass(descriptor)  # type: ignore[no-any-return]


def pool_has(pool: descriptor_pool.DescriptorPool, name: str) -> bool:
    try:
        pool.FindFileByName(name)
    except KeyError:
        return False
    return True
