"""Avro serializer and deserializer (the ``avro`` extra: fastavro).

Values are dicts (or anything ``to_dict`` turns into one); the encoding is Avro's binary
encoding, exactly the bytes fastavro's ``schemaless_writer`` gives, as Confluent's Python
serializer writes them. Named types from referenced schemas are parsed first, so a schema
may use them by name.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

try:
    import fastavro
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("Avro serdes need fastavro: pip install 'aiokafka_lead[avro]'") from exc

from aiokafka_lead.schema_registry.client import RegisteredSchema, Schema, SchemaRegistryClient
from aiokafka_lead.schema_registry.errors import SerializationError
from aiokafka_lead.schema_registry.serde import SchemaDeserializer, SchemaSerializer, referenced_schemas
from aiokafka_lead.schema_registry.wire import SchemaRef


async def parse_avro(client: SchemaRegistryClient, schema: Schema) -> Any:
    """The fastavro form of ``schema``, its references' named types parsed first."""
    named: dict[str, Any] = {}
    try:
        for _, referenced in await referenced_schemas(client, schema):
            fastavro.parse_schema(json.loads(referenced.schema_str), named_schemas=named)
        return fastavro.parse_schema(json.loads(schema.schema_str), named_schemas=named)
    except (ValueError, fastavro.schema.SchemaParseException, fastavro.schema.UnknownType) as exc:
        raise SerializationError(f"not a valid Avro schema: {exc}") from exc


def _record_name(schema_str: str) -> str | None:
    parsed = json.loads(schema_str)
    if not isinstance(parsed, dict):
        return None
    name = parsed.get("name")
    if name is None:
        return str(parsed.get("type")) if isinstance(parsed.get("type"), str) else None
    namespace = parsed.get("namespace")
    return f"{namespace}.{name}" if namespace and "." not in name else str(name)


class AvroSerializer(SchemaSerializer):
    """``AvroSerializer(client, schema_str)``: writes values with this Avro schema
    (``references`` for the named types it imports). See :class:`SchemaSerializer` for the
    registration and framing keywords; ``to_dict(value)`` converts objects first."""

    schema_type = "AVRO"

    def __init__(
        self,
        client: SchemaRegistryClient,
        schema_str: str | None = None,
        *,
        references: tuple[Any, ...] = (),
        to_dict: Callable[[Any], Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(client, **options)
        if schema_str is None and not self.use_latest_version:
            raise ValueError("AvroSerializer needs schema_str unless use_latest_version=True")
        try:
            self.record_name = _record_name(schema_str) if schema_str is not None else None
        except ValueError as exc:
            raise SerializationError(f"the Avro schema is not JSON: {exc}") from exc
        self.schema = Schema(schema_str or "", "AVRO", tuple(references))
        self._to_dict = to_dict

    async def encoder(self, registered: RegisteredSchema) -> Callable[[Any], bytes]:
        schema = self.schema if not self.use_latest_version else registered.schema
        parsed = await parse_avro(self.client, schema)
        write = fastavro.schemaless_writer
        to_dict = self._to_dict

        def encode(value: Any) -> bytes:
            out = io.BytesIO()
            write(out, parsed, to_dict(value) if to_dict is not None else value)
            return out.getvalue()

        return encode


class AvroDeserializer(SchemaDeserializer):
    """Decodes Avro values written with any registered schema: with the writer's schema, or
    resolved to ``reader_schema_str`` (Avro's schema resolution) when given. ``from_dict``
    converts each decoded dict."""

    def __init__(
        self,
        client: SchemaRegistryClient,
        reader_schema_str: str | None = None,
        *,
        is_key: bool = False,
        from_dict: Callable[[Any], Any] | None = None,
        return_record_name: bool = False,
    ) -> None:
        super().__init__(client, is_key=is_key)
        self._reader_str = reader_schema_str
        self._reader: Any = None
        self._from_dict = from_dict
        self._return_record_name = return_record_name

    async def decoder(self, ref: SchemaRef) -> Callable[[memoryview], Any]:
        writer = await parse_avro(self.client, await self.writer_schema(ref))
        if self._reader_str is not None and self._reader is None:
            self._reader = await parse_avro(self.client, Schema(self._reader_str))
        reader, read = self._reader, fastavro.schemaless_reader
        from_dict, named = self._from_dict, self._return_record_name

        def decode(payload: memoryview) -> Any:
            value = read(io.BytesIO(payload), writer, reader, named)
            return from_dict(value) if from_dict is not None else value

        return decode
