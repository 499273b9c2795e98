"""The serializers' choices (subjects, registration, latest version, references) and their
errors, each against confluent-kafka's serializer on the same registry where it has one."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, topic_record_subject_name_strategy
from confluent_kafka.schema_registry import Schema as TheirSchema
from confluent_kafka.schema_registry import SchemaReference as TheirReference
from confluent_kafka.schema_registry._async.avro import AsyncAvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from aiokafka_lead.schema_registry import (
    NotFoundError,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    SerializationError,
    record_name_strategy,
    topic_record_name_strategy,
)
from aiokafka_lead.schema_registry.avro import AvroDeserializer, AvroSerializer
from aiokafka_lead.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from aiokafka_lead.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from aiokafka_lead.testing.schema_registry import SchemaRegistryServer
from tests.support.schema_types import AVRO_MONEY, AVRO_ORDER, AVRO_USER, JSON_ORDER, ORDER_VALUE, PROTO

USER = {"name": "ada lovelace", "age": 36}


@pytest.fixture
def server() -> Iterator[SchemaRegistryServer]:
    with SchemaRegistryServer() as registry:
        yield registry


async def test_avro_references_byte_for_byte(server: SchemaRegistryServer) -> None:
    ours = SchemaRegistryClient(server.url)
    money = await ours.register_schema("shop.Money", Schema(AVRO_MONEY))
    refs = (SchemaReference("shop.Money", "shop.Money", money.version or 1),)
    mine = await AvroSerializer(ours, AVRO_ORDER, references=refs)(ORDER_VALUE, "orders")
    their_schema = TheirSchema(
        AVRO_ORDER, "AVRO", [TheirReference(r.name, r.subject, r.version) for r in refs]
    )
    serializer = await AsyncAvroSerializer(AsyncSchemaRegistryClient({"url": server.url}), their_schema)
    theirs = await serializer(ORDER_VALUE, SerializationContext("orders", MessageField.VALUE))
    assert mine == theirs
    assert await AvroDeserializer(ours)(theirs, "orders") == ORDER_VALUE


async def test_subject_name_strategies_match_confluents(server: SchemaRegistryServer) -> None:
    ours = SchemaRegistryClient(server.url)
    await AvroSerializer(ours, AVRO_USER, subject_name_strategy=record_name_strategy)(USER, "t1")
    await AvroSerializer(ours, AVRO_USER, subject_name_strategy=topic_record_name_strategy, is_key=True)(
        USER, "t2"
    )
    await AvroSerializer(ours, AVRO_USER)(USER, "t3")
    await AvroSerializer(ours, AVRO_USER, is_key=True)(USER, "t3")
    assert await ours.get_subjects() == ["people.User", "t2-people.User", "t3-key", "t3-value"]
    their = topic_record_subject_name_strategy(SerializationContext("t2", MessageField.KEY), "people.User")
    assert their == "t2-people.User"
    with pytest.raises(SerializationError, match="needs a named schema"):
        await AvroSerializer(ours, '"string"', subject_name_strategy=record_name_strategy)("x", "t")


async def test_use_latest_version_writes_with_the_subjects_latest_schema(
    server: SchemaRegistryServer,
) -> None:
    ours = SchemaRegistryClient(server.url)
    latest = await ours.register_schema("t-value", Schema(AVRO_USER))
    serializer = AvroSerializer(ours, use_latest_version=True, auto_register_schemas=False)
    payload = await serializer(USER, "t")
    assert payload is not None and int.from_bytes(payload[1:5], "big") == latest.schema_id
    with pytest.raises(ValueError, match="needs auto_register_schemas=False"):
        AvroSerializer(ours, AVRO_USER, use_latest_version=True)


async def test_normalize_schemas_is_sent(server: SchemaRegistryServer) -> None:
    ours = SchemaRegistryClient(server.url)
    spaced = json.dumps(json.loads(AVRO_USER), indent=4)
    first = await AvroSerializer(ours, AVRO_USER, normalize_schemas=True)(USER, "t")
    second = await AvroSerializer(ours, spaced, normalize_schemas=True)(USER, "t")
    assert first == second
    assert await ours.get_versions("t-value") == [1]


async def test_values_that_do_not_fit_the_schema_are_clear_errors(server: SchemaRegistryServer) -> None:
    ours = SchemaRegistryClient(server.url)
    with pytest.raises(SerializationError, match="cannot encode a dict with the schema of t"):
        await AvroSerializer(ours, AVRO_USER)({"name": "x"}, "t")
    with pytest.raises(SerializationError, match=r"does not match its JSON Schema at total/units"):
        await JSONSerializer(ours, JSON_ORDER)({"id": "x", "total": {"units": "many"}}, "j")
    with pytest.raises(SerializationError, match="expected a Refund, got a Money"):
        await ProtobufSerializer(ours, PROTO["Refund"])(PROTO["Money"](), "p")
    with pytest.raises(SerializationError, match="header framing appends a header"):
        await AvroSerializer(ours, AVRO_USER, framing="header")(USER, "t")
    assert await AvroSerializer(ours, AVRO_USER)(None, "t") is None


async def test_bytes_that_do_not_decode_are_clear_errors(server: SchemaRegistryServer) -> None:
    ours = SchemaRegistryClient(server.url)
    payload = await AvroSerializer(ours, AVRO_USER)(USER, "t")
    assert payload is not None
    reader = AvroDeserializer(ours)
    with pytest.raises(SerializationError, match="cannot decode the value of a record from t with schema 1"):
        await reader(payload[:7], "t")
    with pytest.raises(SerializationError, match="starts with byte 123"):
        await reader(b'{"name": "json, not avro"}', "t")
    with pytest.raises(NotFoundError, match="Schema 77 not found"):
        await reader(b"\x00\x00\x00\x00\x4d\x02", "t")
    with pytest.raises(SerializationError, match="key schema-id header of a record from t"):
        await AvroDeserializer(ours, is_key=True)(payload, "t", [("__key_schema_id", b"\x01abc")])
    with pytest.raises(SerializationError, match="cannot decode"):
        await JSONDeserializer(ours)(b"\x00\x00\x00\x00\x01{not json", "t")
    proto = await ProtobufSerializer(ours, PROTO["Refund"])(PROTO["Refund"](order_id="o"), "p")
    assert proto is not None
    with pytest.raises(
        SerializationError, match=r"message indexes \[5\] name no message of shop/order.proto"
    ):
        await ProtobufDeserializer(ours)(proto[:5] + b"\x02\x0a" + proto[7:], "p")
    assert await reader(None, "t") is None


async def test_avro_reader_schema_resolves_old_records(server: SchemaRegistryServer) -> None:
    ours = SchemaRegistryClient(server.url)
    payload = await AvroSerializer(ours, AVRO_USER)(USER, "t")
    reader_schema = json.loads(AVRO_USER)
    reader_schema["fields"].append({"name": "email", "type": ["null", "string"], "default": None})
    value = await AvroDeserializer(ours, json.dumps(reader_schema))(payload, "t")
    assert value == {**USER, "email": None}


def test_the_consumer_refuses_async_deserializers_naming_the_wrapper() -> None:
    from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka_lead.errors import KafkaConfigurationError

    registry = SchemaRegistryClient("http://127.0.0.1:1")

    async def deserialize(data: bytes) -> object:
        return data

    for make in [
        lambda: AIOKafkaConsumer(value_deserializer=AvroDeserializer(registry)),
        lambda: AIOKafkaConsumer(key_deserializer=deserialize),
    ]:
        with pytest.raises(KafkaConfigurationError, match=r"is an async callable.*DeserializingConsumer"):
            make()
    # the producer awaits async serializers itself
    AIOKafkaProducer(value_serializer=AvroSerializer(registry, AVRO_USER))


async def test_json_schema_references_resolve(server: SchemaRegistryServer) -> None:
    ours = SchemaRegistryClient(server.url)
    money = json.dumps(
        {"type": "object", "properties": {"units": {"type": "integer"}}, "required": ["units"]}
    )
    registered = await ours.register_schema("money", Schema(money, "JSON"))
    order = json.dumps({"type": "object", "properties": {"total": {"$ref": "money.json"}}})
    refs = (SchemaReference("money.json", "money", registered.version or 1),)
    serializer = JSONSerializer(ours, order, references=refs)
    payload = await serializer({"total": {"units": 5}}, "orders")
    assert await JSONDeserializer(ours, validate=True)(payload, "orders") == {"total": {"units": 5}}
    with pytest.raises(SerializationError, match="at total: 'units' is a required property"):
        await serializer({"total": {}}, "orders")


async def test_protobuf_well_known_imports_are_not_registered(server: SchemaRegistryServer) -> None:
    from confluent_kafka.schema_registry._async.protobuf import AsyncProtobufSerializer
    from google.protobuf.timestamp_pb2 import Timestamp

    event = PROTO["Event"](at=Timestamp(seconds=5, nanos=7))
    mine = await ProtobufSerializer(SchemaRegistryClient(server.url), PROTO["Event"])(event, "events")
    theirs = await (
        await AsyncProtobufSerializer(
            PROTO["Event"],
            AsyncSchemaRegistryClient({"url": server.url}),
            conf={"use.deprecated.format": False},
        )
    )(event, SerializationContext("events", MessageField.VALUE))
    assert mine == theirs
    assert sorted(server.registry.subjects) == ["events-value"]
    decoded = await ProtobufDeserializer(SchemaRegistryClient(server.url))(mine, "events")
    assert (decoded.at.seconds, decoded.at.nanos) == (5, 7)


def test_a_producer_with_an_async_serializer_holds_no_cycle() -> None:
    """Dropped unclosed, it goes at once (and warns), as a producer without one does."""
    import gc
    import weakref

    from aiokafka_lead import AIOKafkaProducer

    async def serialize(value: object, topic: str, headers: object) -> bytes:
        return b""

    gc.disable()
    try:
        producer = AIOKafkaProducer(value_serializer=serialize)
        ref = weakref.ref(producer)
        del producer
        assert ref() is None
    finally:
        gc.enable()
