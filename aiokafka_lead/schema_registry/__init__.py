"""Schema Registry serdes: Avro, Protobuf and JSON Schema framed as Confluent's are.

The client and the framing need nothing beyond the core; each format needs its extra:
``aiokafka_lead[avro]`` (fastavro), ``[protobuf]`` (protobuf), ``[jsonschema]`` (jsonschema).
Import the serdes from their modules: ``aiokafka_lead.schema_registry.avro`` and so on.
docs/schema-registry.md has the recipes.
"""

from aiokafka_lead.schema_registry.client import (
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
)
from aiokafka_lead.schema_registry.errors import (
    AuthenticationError,
    IncompatibleSchemaError,
    InvalidSchemaError,
    NotFoundError,
    RegistryUnavailableError,
    SchemaRegistryError,
    SerializationError,
)
from aiokafka_lead.schema_registry.kafka import (
    DeserializingConsumer,
    RecordDeserializationError,
    deserialize_record,
)
from aiokafka_lead.schema_registry.serde import (
    SchemaDeserializer,
    SchemaSerializer,
    record_name_strategy,
    topic_name_strategy,
    topic_record_name_strategy,
)

__all__ = [
    "AuthenticationError",
    "DeserializingConsumer",
    "IncompatibleSchemaError",
    "InvalidSchemaError",
    "NotFoundError",
    "RecordDeserializationError",
    "RegisteredSchema",
    "RegistryUnavailableError",
    "Schema",
    "SchemaDeserializer",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "SchemaSerializer",
    "SerializationError",
    "deserialize_record",
    "record_name_strategy",
    "topic_name_strategy",
    "topic_record_name_strategy",
]
