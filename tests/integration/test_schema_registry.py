"""Schema-registry serdes through a real broker and a real registry, against confluent-kafka:
for Avro, Protobuf and JSON Schema, in prefix and header framing, confluent-kafka's
serializer and ours write the same bytes (and the same schema-id header); records that
librdkafka produced are decoded by ours, records that ours produced by confluent-kafka's."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as TheirTopicPartition
from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, header_schema_id_serializer
from confluent_kafka.schema_registry import SchemaRegistryError as TheirRegistryError
from confluent_kafka.schema_registry._async.avro import AsyncAvroDeserializer, AsyncAvroSerializer
from confluent_kafka.schema_registry._async.json_schema import AsyncJSONDeserializer, AsyncJSONSerializer
from confluent_kafka.schema_registry._async.protobuf import AsyncProtobufDeserializer, AsyncProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.runtime import ClientClosedError
from aiokafka_lead.schema_registry import (
    DeserializingConsumer,
    IncompatibleSchemaError,
    RecordDeserializationError,
    SchemaRegistryClient,
)
from aiokafka_lead.schema_registry.avro import AvroDeserializer, AvroSerializer
from aiokafka_lead.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from aiokafka_lead.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from tests.integration.conftest import unique
from tests.support.schema_types import AVRO_USER, JSON_ORDER, ORDER_VALUE, PROTO, proto_refund

pytestmark = pytest.mark.integration

Headers = list[tuple[str, bytes]]


async def their_serdes(fmt: str, framing: str, url: str) -> tuple[Any, Any, Any]:
    """confluent-kafka's serializer and deserializer, and the value they carry."""
    client = AsyncSchemaRegistryClient({"url": url})
    conf: dict[str, Any] = (
        {"schema.id.serializer": header_schema_id_serializer} if framing == "header" else {}
    )
    if fmt == "avro":
        return (
            await AsyncAvroSerializer(client, AVRO_USER, conf=conf),
            await AsyncAvroDeserializer(client),
            {"name": "ada lovelace", "age": 36},
        )
    if fmt == "protobuf":
        conf["use.deprecated.format"] = False
        return (
            await AsyncProtobufSerializer(PROTO["Refund"], client, conf=conf),
            await AsyncProtobufDeserializer(PROTO["Refund"], conf={"use.deprecated.format": False}),
            proto_refund(),
        )
    return (
        await AsyncJSONSerializer(JSON_ORDER, client, conf=conf),
        await AsyncJSONDeserializer(JSON_ORDER, schema_registry_client=client),
        ORDER_VALUE,
    )


def our_serdes(fmt: str, framing: Any, url: str) -> tuple[Any, Any]:
    client = SchemaRegistryClient(url)
    if fmt == "avro":
        return AvroSerializer(client, AVRO_USER, framing=framing), AvroDeserializer(client)
    if fmt == "protobuf":
        return ProtobufSerializer(client, PROTO["Refund"], framing=framing), ProtobufDeserializer(client)
    return JSONSerializer(client, JSON_ORDER, framing=framing), JSONDeserializer(client, validate=True)


async def one_partition_topic(bootstrap: str, prefix: str) -> str:
    topic = unique(prefix)
    async with AdminClient(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    return topic


def comparable(value: Any) -> Any:
    if hasattr(value, "SerializeToString"):
        return (value.DESCRIPTOR.full_name, value.SerializeToString())
    return value


def librdkafka_read(bootstrap: str, topic: str, count: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": unique("g"), "enable.auto.commit": False}
    )
    try:
        consumer.assign([TheirTopicPartition(topic, 0, 0)])
        messages: list[Any] = []
        deadline = time.monotonic() + 60
        while len(messages) < count and time.monotonic() < deadline:
            messages += [m for m in consumer.consume(count - len(messages), timeout=0.5) if m.error() is None]
        return messages
    finally:
        consumer.close()


def librdkafka_write(bootstrap: str, topic: str, value: bytes, headers: Headers) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value=value, headers=headers)
    assert producer.flush(60) == 0


@pytest.mark.parametrize("framing", ["prefix", "header"])
@pytest.mark.parametrize("fmt", ["avro", "protobuf", "json"])
async def test_byte_identical_both_ways_through_the_broker(
    kafka_bootstrap: str, schema_registry_url: str, fmt: str, framing: str
) -> None:
    topic = await one_partition_topic(kafka_bootstrap, f"sr-{fmt}-{framing}")
    their_ser, their_de, value = await their_serdes(fmt, framing, schema_registry_url)
    our_ser, our_de = our_serdes(fmt, framing, schema_registry_url)

    their_headers: Headers = []
    theirs = await their_ser(value, SerializationContext(topic, MessageField.VALUE, their_headers))
    our_headers: list[tuple[str, bytes | None]] = []
    ours = await our_ser(value, topic, our_headers)
    assert ours == theirs
    assert our_headers == their_headers
    if framing == "header":
        assert [name for name, _ in our_headers] == ["__value_schema_id"]
        assert our_headers[0][1] is not None and our_headers[0][1][0] == 1

    # librdkafka writes confluent-kafka's bytes; our producer awaits our serializer
    await anyio.to_thread.run_sync(librdkafka_write, kafka_bootstrap, topic, theirs, their_headers)
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, value_serializer=our_ser) as producer:
        await producer.send_and_wait(topic, value)

    async with AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=None) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        reader = DeserializingConsumer(consumer, value_deserializer=our_de)
        with anyio.fail_after(60):
            decoded = [await reader.getone(), await reader.getone()]
    # Protobuf without a class decodes into one built from the registered descriptors
    assert [comparable(r.value) for r in decoded] == [comparable(value)] * 2
    assert [list(r.headers) for r in decoded] == [their_headers, their_headers]

    raw = await anyio.to_thread.run_sync(librdkafka_read, kafka_bootstrap, topic, 2)
    assert [m.value() for m in raw] == [theirs, theirs]
    for message in raw:
        headers = message.headers() or []
        ctx = SerializationContext(topic, MessageField.VALUE, headers)
        assert await their_de(message.value(), ctx) == value


async def test_async_keys_and_values_with_record_headers(
    kafka_bootstrap: str, schema_registry_url: str
) -> None:
    """Key and value serialized by async serializers the producer awaits, both header-framed,
    beside the caller's header (the caller's list left as it was)."""
    topic = await one_partition_topic(kafka_bootstrap, "sr-keys")
    client = SchemaRegistryClient(schema_registry_url)
    key_ser = JSONSerializer(client, '{"type": "string"}', is_key=True, framing="header")
    value_ser = AvroSerializer(client, AVRO_USER, framing="header")
    user = {"name": "grace hopper", "age": 85}
    headers = [("trace", b"t1")]
    async with AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap, key_serializer=key_ser, value_serializer=value_ser
    ) as producer:
        await producer.send_and_wait(topic, user, key="k-1", headers=headers)
        with pytest.raises(TypeError, match="create_batch"):
            producer.create_batch()

    async def not_bytes(value: Any, topic: str, headers: Any) -> Any:
        return str(value)

    async with AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap, key_serializer=str.encode, value_serializer=not_bytes
    ) as producer:
        with pytest.raises(TypeError, match="value must be bytes"):
            await producer.send(topic, user, key="k-2")
    called: list[Any] = []

    async def spy(value: Any, topic: str, headers: Any) -> bytes:
        called.append(value)
        return b"x"

    idle = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, value_serializer=spy)
    with pytest.raises(ClientClosedError, match="not running"):
        await idle.send(topic, user)
    assert called == []  # refused before the serializer ran
    assert headers == [("trace", b"t1")]
    async with AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=None) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        key_de: Callable[..., Any] = JSONDeserializer(client, is_key=True)
        reader = DeserializingConsumer(
            consumer, key_deserializer=key_de, value_deserializer=AvroDeserializer(client)
        )
        with anyio.fail_after(60):
            batches = {}
            while not batches:
                batches = await reader.getmany(timeout_ms=1000)
    [record] = batches[tp]
    assert (record.key, record.value) == ("k-1", user)
    assert [name for name, _ in record.headers] == ["trace", "__key_schema_id", "__value_schema_id"]


async def test_a_record_that_does_not_decode_loses_nothing(
    kafka_bootstrap: str, schema_registry_url: str
) -> None:
    """Records before the bad one are returned; the bad one is raised (again, until skipped)
    with its offset; the records after it come once it is skipped."""
    topic = await one_partition_topic(kafka_bootstrap, "sr-bad")
    client = SchemaRegistryClient(schema_registry_url)
    serializer = AvroSerializer(client, AVRO_USER)
    users = [{"name": f"user {i}", "age": i} for i in range(4)]
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap) as producer:
        for value in [
            await serializer(users[0], topic),
            b"\x00\x00\x00\x00",
            await serializer(users[1], topic),
        ]:
            await producer.send_and_wait(topic, value)
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, value_serializer=serializer) as producer:
        for user in users[2:]:
            await producer.send_and_wait(topic, user)
    async with AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=None) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        reader = DeserializingConsumer(consumer, value_deserializer=AvroDeserializer(client))
        got: list[Any] = []
        failures: list[int] = []
        with anyio.fail_after(60):
            while len(got) < len(users):
                try:
                    batches = await reader.getmany(timeout_ms=500, max_records=3)
                except RecordDeserializationError as error:
                    failures.append(error.offset)
                    assert error.topic_partition == tp and "too short" in str(error)
                    if failures.count(error.offset) == 2:
                        consumer.seek(tp, error.offset + 1)
                    continue
                got += [record.value for record in batches.get(tp, [])]
    assert got == users
    assert failures == [1, 1]


async def test_evolution_through_the_broker(kafka_bootstrap: str, schema_registry_url: str) -> None:
    """A compatible new version is registered and both versions' records are read with the
    new reader schema; an incompatible one is refused with the registry's message, to ours
    and to confluent-kafka's serializer alike."""
    topic = await one_partition_topic(kafka_bootstrap, "sr-evolve")
    client = SchemaRegistryClient(schema_registry_url)
    v2 = json.loads(AVRO_USER)
    v2["fields"].append({"name": "email", "type": ["null", "string"], "default": None})
    bad = json.loads(AVRO_USER)
    bad["fields"].append({"name": "country", "type": "string"})
    for schema, value in [
        (AVRO_USER, {"name": "ada", "age": 36}),
        (json.dumps(v2), {"name": "bob", "age": 9, "email": "b@x"}),
    ]:
        serializer = AvroSerializer(client, schema)
        async with AIOKafkaProducer(
            bootstrap_servers=kafka_bootstrap, value_serializer=serializer
        ) as producer:
            await producer.send_and_wait(topic, value)
    assert await client.get_versions(f"{topic}-value") == [1, 2]
    with pytest.raises(IncompatibleSchemaError, match="incompatible") as ours:
        await AvroSerializer(client, json.dumps(bad))({"name": "x", "age": 1, "country": "y"}, topic)
    their_serializer = await AsyncAvroSerializer(
        AsyncSchemaRegistryClient({"url": schema_registry_url}), json.dumps(bad)
    )
    with pytest.raises(TheirRegistryError) as theirs:
        await their_serializer(
            {"name": "x", "age": 1, "country": "y"}, SerializationContext(topic, MessageField.VALUE)
        )
    assert (theirs.value.http_status_code, theirs.value.error_message) == (409, ours.value.message)

    async with AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=None) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        reader = DeserializingConsumer(consumer, value_deserializer=AvroDeserializer(client, json.dumps(v2)))
        with anyio.fail_after(60):
            values = [(await reader.getone()).value for _ in range(2)]
    assert values == [{"name": "ada", "age": 36, "email": None}, {"name": "bob", "age": 9, "email": "b@x"}]
