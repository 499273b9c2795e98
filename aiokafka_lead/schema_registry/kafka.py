"""Async serializers with the producer and consumer: ``SerializingProducer`` and
``DeserializingConsumer`` wrap a started client and await the serdes around it.

The producer's own ``key_serializer``/``value_serializer`` stay synchronous callables, so its
``send()`` costs nothing more for the many applications that pass bytes; the wrappers await
an async serializer (given the topic and the record's header list) before calling it, and
an async deserializer on each record a poll returns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Iterable, MutableSequence, Sequence
from typing import Any, Protocol

from aiokafka_lead.schema_registry.errors import SerializationError
from aiokafka_lead.structs import ConsumerRecord, TopicPartition


class AsyncSerializer(Protocol):
    def __call__(
        self, value: Any, topic: str, headers: MutableSequence[tuple[str, bytes | None]] | None = None, /
    ) -> Awaitable[bytes | None]: ...


class AsyncDeserializer(Protocol):
    def __call__(
        self, data: bytes | None, topic: str, headers: Sequence[tuple[str, bytes | None]] | None = None, /
    ) -> Awaitable[Any]: ...


class SerializingProducer:
    """``SerializingProducer(producer, value_serializer=AvroSerializer(...))``: ``send`` and
    ``send_and_wait`` as the producer's, with the key and value serialized first. The
    producer is yours to start and stop."""

    def __init__(
        self,
        producer: Any,
        *,
        key_serializer: AsyncSerializer | None = None,
        value_serializer: AsyncSerializer | None = None,
    ) -> None:
        self.producer = producer
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer

    async def serialize(
        self, topic: str, key: Any, value: Any, headers: Iterable[tuple[str, bytes | None]] | None
    ) -> tuple[Any, Any, list[tuple[str, bytes | None]]]:
        header_list = list(headers or ())
        if self.key_serializer is not None:
            key = await self.key_serializer(key, topic, header_list)
        if self.value_serializer is not None:
            value = await self.value_serializer(value, topic, header_list)
        return key, value, header_list

    async def send(  # noqa: PLR0917 - the producer's positional signature
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
    ) -> Any:
        key, value, header_list = await self.serialize(topic, key, value, headers)
        return await self.producer.send(topic, value, key, partition, timestamp_ms, header_list or None)

    async def send_and_wait(  # noqa: PLR0917 - the producer's positional signature
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
    ) -> Any:
        return await (await self.send(topic, value, key, partition, timestamp_ms, headers))


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
