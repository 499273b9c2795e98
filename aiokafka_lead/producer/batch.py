"""A producer batch and the per-record delivery handles that resolve with it.

``send()`` returns a :class:`DeliveryHandle`: awaitable (resolves to RecordMetadata or
raises the delivery error), with ``done()/result()/exception()/add_done_callback()`` like
an asyncio Future, but backend-neutral. Every handle is resolved exactly once, by success,
failure, expiry or close: none is left pending.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from typing import Any

import anyio

from aiokafka_lead.records import RecordBatchBuilder
from aiokafka_lead.structs import RecordMetadata, TopicPartition

LOG_APPEND_TIME = 1
CREATE_TIME = 0


class DeliveryHandle:
    """The outcome of one ``send()``; ``await handle`` gives its RecordMetadata."""

    __slots__ = ("_batch", "_index", "_timestamp")

    def __init__(self, batch: ProducerBatch, index: int, timestamp: int) -> None:
        self._batch = batch
        self._index = index
        self._timestamp = timestamp

    def done(self) -> bool:
        return self._batch.done

    def cancelled(self) -> bool:
        return False

    def exception(self) -> BaseException | None:
        if not self._batch.done:
            raise RuntimeError("delivery is still pending")
        return self._batch.error

    def result(self) -> RecordMetadata:
        batch = self._batch
        if not batch.done:
            raise RuntimeError("delivery is still pending")
        if batch.error is not None:
            raise batch.error
        if batch.log_append_time >= 0:
            timestamp, kind = batch.log_append_time, LOG_APPEND_TIME
        else:
            timestamp, kind = self._timestamp, CREATE_TIME
        offset = batch.base_offset + self._index if batch.base_offset >= 0 else -1
        return RecordMetadata(
            batch.tp.topic, batch.tp.partition, batch.tp, offset, timestamp, kind, batch.log_start_offset
        )

    def add_done_callback(self, fn: Callable[[DeliveryHandle], Any]) -> None:
        if self._batch.done:
            fn(self)
        else:
            self._batch.callbacks.append(lambda: fn(self))

    async def wait(self) -> RecordMetadata:
        await self._batch.done_event.wait()
        return self.result()

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        return self.wait().__await__()


class ProducerBatch:
    """Records bound for one partition, sent (and retried) as one RecordBatch."""

    def __init__(
        self, tp: TopicPartition, builder: RecordBatchBuilder, created_at: float | None = None
    ) -> None:
        self.tp = tp
        self.builder = builder
        self.created_at = time.monotonic() if created_at is None else created_at
        self.reserved = 0  # buffer_memory bytes held until the batch resolves
        self.attempts = 0  # failed sends so far
        self.sent_epoch = -2  # leader epoch the store knew when the batch was last sent
        self.last_failure = 0.0
        self.retry_at = 0.0  # earliest time of the next retry unless the epoch advanced
        self.base_sequence = -1
        self.producer_id = -1
        self.producer_epoch = -1
        self.transactional = False
        self.done = False
        self.error: BaseException | None = None
        self.base_offset = -1
        self.log_append_time = -1
        self.log_start_offset: int | None = None
        self.done_event = anyio.Event()
        self.callbacks: list[Callable[[], Any]] = []
        self._handles = 0

    def __repr__(self) -> str:
        where = f"{self.tp.topic}-{self.tp.partition}"
        return f"<ProducerBatch {where} n={self.record_count} attempts={self.attempts}>"

    @property
    def record_count(self) -> int:
        return self.builder.record_count

    @property
    def closed(self) -> bool:
        return self.builder.is_closed

    def handle(self, index: int = 0, timestamp: int = -1) -> DeliveryHandle:
        """A handle on one record of an already-filled batch (``send_batch``)."""
        return DeliveryHandle(self, index, timestamp)

    def try_append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]],
    ) -> DeliveryHandle | None:
        if self.builder.append(timestamp, key, value, headers) is None:
            return None
        handle = DeliveryHandle(self, self._handles, timestamp)
        self._handles += 1
        return handle

    def close(self) -> None:
        if not self.builder.is_closed:
            self.builder.close()

    def payload(self) -> bytes:
        """The batch's bytes with its producer id, epoch and base sequence stamped in."""
        return self.builder.build(
            self.producer_id, self.producer_epoch, self.base_sequence, is_transactional=self.transactional
        )

    def _resolve(self) -> None:
        self.done = True
        self.done_event.set()
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback()

    def complete(
        self, base_offset: int, log_append_time: int = -1, log_start_offset: int | None = None
    ) -> None:
        if self.done:
            return
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset
        self._resolve()

    def fail(self, error: BaseException) -> None:
        if self.done:
            return
        self.error = error
        self._resolve()
