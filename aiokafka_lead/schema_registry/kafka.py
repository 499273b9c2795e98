"""Async deserializers with the consumer: ``DeserializingConsumer`` wraps a started consumer
and awaits the deserializers on each record a poll returns.

The consumer's own ``key_deserializer``/``value_deserializer`` stay synchronous (they run in
its record-building loop, the C extension's when built); the producer awaits async
serializers itself (``AIOKafkaProducer(value_serializer=AvroSerializer(...))``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, Protocol

from aiokafka_lead.schema_registry.errors import SerializationError
from aiokafka_lead.structs import ConsumerRecord, TopicPartition


class AsyncDeserializer(Protocol):
    def __call__(
        self, data: bytes | None, topic: str, headers: Sequence[tuple[str, bytes | None]] | None = None, /
    ) -> Awaitable[Any]: ...


async def deserialize_record(
    record: ConsumerRecord[Any, Any],
    key_deserializer: AsyncDeserializer | None,
    value_deserializer: AsyncDeserializer | None,
) -> ConsumerRecord[Any, Any]:
    """A copy of ``record`` with its key and value decoded."""
    key, value = record.key, record.value
    if key_deserializer is not None:
        key = await key_deserializer(key, record.topic, record.headers)
    if value_deserializer is not None:
        value = await value_deserializer(value, record.topic, record.headers)
    return dataclasses.replace(record, key=key, value=value)


class RecordDeserializationError(SerializationError):
    """A record's key or value could not be decoded. The consumer's position is left at it
    (``topic_partition``, ``offset``): ``consumer.seek(topic_partition, offset + 1)`` skips
    it; ``record`` is the record as fetched, undecoded."""

    def __init__(self, record: ConsumerRecord[Any, Any], cause: Exception) -> None:
        self.record = record
        self.topic_partition = TopicPartition(record.topic, record.partition)
        self.offset = record.offset
        super().__init__(f"{record.topic}-{record.partition} at offset {record.offset}: {cause}")


class DeserializingConsumer:
    """``DeserializingConsumer(consumer, value_deserializer=AvroDeserializer(...))``:
    ``getone``, ``getmany`` and ``async for`` as the consumer's, with keys and values
    decoded. The consumer is yours to start, stop and commit with.

    A record that cannot be decoded loses nothing: the records decoded before it in the same
    poll are returned, the consumer's positions are moved back to the first record not
    returned, and the next call raises :class:`RecordDeserializationError` for it (the
    registry's errors, such as :class:`RegistryUnavailableError`, propagate the same way,
    the positions moved back first)."""

    def __init__(
        self,
        consumer: Any,
        *,
        key_deserializer: AsyncDeserializer | None = None,
        value_deserializer: AsyncDeserializer | None = None,
    ) -> None:
        self.consumer = consumer
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer

    async def _decode(self, record: ConsumerRecord[Any, Any]) -> ConsumerRecord[Any, Any]:
        try:
            return await deserialize_record(record, self.key_deserializer, self.value_deserializer)
        except SerializationError as exc:
            raise RecordDeserializationError(record, exc) from exc

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[Any, Any]:
        record = await self.consumer.getone(*partitions)
        try:
            return await self._decode(record)
        except BaseException:
            self.consumer.seek(TopicPartition(record.topic, record.partition), record.offset)
            raise

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: float = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        batches = await self.consumer.getmany(*partitions, timeout_ms=timeout_ms, max_records=max_records)
        decoded: dict[TopicPartition, list[ConsumerRecord[Any, Any]]] = {}
        pending = list(batches.items())
        for index, (tp, records) in enumerate(pending):
            done: list[ConsumerRecord[Any, Any]] = []
            try:
                for record in records:
                    done.append(await self._decode(record))
            except BaseException:
                # back to the first record not returned, here and in the partitions not reached
                self.consumer.seek(tp, records[len(done)].offset)
                for later, rest in pending[index + 1 :]:
                    if rest:
                        self.consumer.seek(later, rest[0].offset)
                if done:
                    decoded[tp] = done
                if not decoded:
                    raise
                return decoded
            decoded[tp] = done
        return decoded

    async def __aiter__(self) -> AsyncIterator[ConsumerRecord[Any, Any]]:
        while True:
            try:
                record = await self.consumer.__anext__()
            except StopAsyncIteration:
                return
            try:
                decoded = await self._decode(record)
            except BaseException:
                self.consumer.seek(TopicPartition(record.topic, record.partition), record.offset)
                raise
            yield decoded
