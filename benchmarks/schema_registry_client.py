"""One side of benchmarks/schema_registry.py, in its own process: serialise then deserialise
``--records`` Avro records with one client's serdes (schema cached after a warm-up), timing
each loop with the process's CPU clock. Prints ``PROGRESS <n>`` lines and one ``RESULT
<json>`` line: microseconds per record for each step."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

TOPIC = "bench"
SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "bench",
        "fields": [
            {"name": "id", "type": "string"},
            {"name": "customer", "type": "string"},
            {"name": "amount_cents", "type": "long"},
            {"name": "quantity", "type": "int"},
            {"name": "price", "type": "double"},
            {"name": "paid", "type": "boolean"},
            {"name": "note", "type": ["null", "string"], "default": None},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
        ],
    }
)

Step = Callable[[Any], Awaitable[Any]]


def value(size: int) -> dict[str, Any]:
    return {
        "id": "order-000042",
        "customer": "c" * size,
        "amount_cents": 1_234_567,
        "quantity": 3,
        "price": 41.5,
        "paid": True,
        "note": None,
        "tags": ["express", "gift"],
    }


async def ours(url: str) -> tuple[Step, Step]:
    from aiokafka_lead.schema_registry import SchemaRegistryClient
    from aiokafka_lead.schema_registry.avro import AvroDeserializer, AvroSerializer

    client = SchemaRegistryClient(url)
    serializer, deserializer = AvroSerializer(client, SCHEMA), AvroDeserializer(client)
    return (lambda v: serializer(v, TOPIC)), (lambda b: deserializer(b, TOPIC))


async def confluent(url: str) -> tuple[Step, Step]:
    from confluent_kafka.schema_registry import AsyncSchemaRegistryClient
    from confluent_kafka.schema_registry._async.avro import AsyncAvroDeserializer, AsyncAvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = AsyncSchemaRegistryClient({"url": url})
    serializer = await AsyncAvroSerializer(client, SCHEMA)
    deserializer = await AsyncAvroDeserializer(client)
    ctx = SerializationContext(TOPIC, MessageField.VALUE)
    return (lambda v: serializer(v, ctx)), (lambda b: deserializer(b, ctx))


async def confluent_sync(url: str) -> tuple[Step, Step]:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": url})
    serializer, deserializer = AvroSerializer(client, SCHEMA), AvroDeserializer(client)
    ctx = SerializationContext(TOPIC, MessageField.VALUE)

    async def serialize(v: Any) -> Any:
        return serializer(v, ctx)

    async def deserialize(b: Any) -> Any:
        return deserializer(b, ctx)

    return serialize, deserialize


SIDES = {"ours": ours, "confluent": confluent, "confluent-sync": confluent_sync}


async def main(args: argparse.Namespace) -> None:
    serialize, deserialize = await SIDES[args.side](args.registry)
    record = value(args.size)
    data = await serialize(record)
    assert await deserialize(data) == record  # the schema is cached from here on
    chunk = max(1, args.records // 20)
    out: dict[str, float] = {}
    steps = (("serialize", serialize, record), ("deserialize", deserialize, data))
    for index, (name, step, arg) in enumerate(steps):
        gc.collect()
        started = time.process_time()
        for done in range(0, args.records, chunk):
            for _ in range(min(chunk, args.records - done)):
                await step(arg)
            print(f"PROGRESS {index * args.records + done + chunk}", flush=True)
        out[f"{name}_us"] = (time.process_time() - started) / args.records * 1e6
    out["total_us"] = out["serialize_us"] + out["deserialize_us"]
    out["payload_bytes"] = len(data)
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("side", choices=sorted(SIDES))
    parser.add_argument("--registry", required=True)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=32)
    asyncio.run(main(parser.parse_args()))
