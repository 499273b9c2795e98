"""JSON Schema serializer and deserializer (the ``jsonschema`` extra).

Values are validated against the schema before they are written (a value that does not
match is refused with the validator's message) and encoded as compact UTF-8 JSON
(``separators=(",", ":")``, non-ASCII kept), the bytes Confluent's Python serializer writes.
Reading validates only when asked (``validate=True``). Referenced schemas are resolved by
the name each reference gives (its ``$ref`` target).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

try:
    import jsonschema
    import referencing
    import referencing.jsonschema
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("JSON Schema serdes need jsonschema: pip install 'aiokafka_lead[jsonschema]'") from exc

from aiokafka_lead.schema_registry.client import RegisteredSchema, Schema, SchemaRegistryClient
from aiokafka_lead.schema_registry.errors import SerializationError
from aiokafka_lead.schema_registry.serde import SchemaDeserializer, SchemaSerializer, referenced_schemas
from aiokafka_lead.schema_registry.wire import SchemaRef


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _resource(body: Any) -> referencing.Resource[Any]:
    return referencing.Resource.from_contents(body, default_specification=referencing.jsonschema.DRAFT202012)


async def make_validator(client: SchemaRegistryClient, schema: Schema) -> Any:
    """A jsonschema validator of the schema's own draft, its references resolvable."""
    try:
        document = json.loads(schema.schema_str)
        resources = [
            (name, _resource(json.loads(referenced.schema_str)))
            for name, referenced in await referenced_schemas(client, schema)
        ]
        registry: referencing.Registry[Any] = referencing.Registry().with_resources(resources)
        cls = jsonschema.validators.validator_for(document)
        cls.check_schema(document)
        return cls(document, registry=registry)
    except (ValueError, jsonschema.SchemaError, referencing.exceptions.Unresolvable) as exc:
        raise SerializationError(f"not a valid JSON Schema: {exc}") from exc


def _check(validator: Any, value: Any) -> None:
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(the value)"
        raise SerializationError(f"the value does not match its JSON Schema at {where}: {error.message}")


class JSONSerializer(SchemaSerializer):
    """``JSONSerializer(client, schema_str)``: validates then writes JSON values; ``to_dict``
    converts objects first; ``validate=False`` skips the validation."""

    schema_type = "JSON"

    def __init__(
        self,
        client: SchemaRegistryClient,
        schema_str: str,
        *,
        references: tuple[Any, ...] = (),
        to_dict: Callable[[Any], Any] | None = None,
        validate: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(client, **options)
        try:
            title = json.loads(schema_str).get("title")
        except (ValueError, AttributeError) as exc:
            raise SerializationError(f"the JSON Schema is not a JSON object: {exc}") from exc
        self.record_name = str(title) if title is not None else None
        self.schema = Schema(schema_str, "JSON", tuple(references))
        self._to_dict = to_dict
        self._validate = validate

    async def encoder(self, registered: RegisteredSchema) -> Callable[[Any], bytes]:
        schema = registered.schema if self.use_latest_version else self.schema
        validator = await make_validator(self.client, schema) if self._validate else None
        to_dict = self._to_dict

        def encode(value: Any) -> bytes:
            if to_dict is not None:
                value = to_dict(value)
            if validator is not None:
                _check(validator, value)
            return dumps(value)

        return encode


class JSONDeserializer(SchemaDeserializer):
    """Decodes JSON values; ``validate=True`` checks each against the writer's schema."""

    def __init__(
        self,
        client: SchemaRegistryClient,
        *,
        is_key: bool = False,
        validate: bool = False,
        from_dict: Callable[[Any], Any] | None = None,
    ) -> None:
        super().__init__(client, is_key=is_key)
        self._validate = validate
        self._from_dict = from_dict

    async def decoder(self, ref: SchemaRef) -> Callable[[memoryview], Any]:
        validator = None
        if self._validate:
            validator = await make_validator(self.client, await self.writer_schema(ref))
        from_dict = self._from_dict

        def decode(payload: memoryview) -> Any:
            value = json.loads(bytes(payload))
            if validator is not None:
                _check(validator, value)
            return from_dict(value) if from_dict is not None else value

        return decode
