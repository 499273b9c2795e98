"""A producer batch and the per-record delivery handles that resolve with it.

``send()`` returns a :class:`DeliveryHandle`: awaitable (resolves to RecordMetadata or
raises the delivery error), with ``done()/result()/exception()/add_done_callback()`` like
an asyncio Future, but backend-neutral. Every handle is resolved exactly once, by success,
failure, expiry or close: none is left pending.

A batch the broker refuses as too large (MESSAGE_TOO_LARGE) is split (:meth:`ProducerBatch.split`):
its records move to smaller batches that keep its creation time and, for the idempotent
producer, its producer id, epoch and consecutive sequences (as Java's ``ProducerBatch.split``).
Handles follow their record to its new batch (``split_into``), callbacks move with it.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio

from aiokafka_lead.records import HEADER_SIZE, RecordBatch, RecordBatchBuilder, native
from aiokafka_lead.structs import RecordMetadata, TopicPartition
from aiokafka_lead.wakeup import asyncio_loop

LOG_APPEND_TIME = 1
CREATE_TIME = 0
_creation_order = itertools.count()


class BatchAppendMetadata(NamedTuple):
    """What ``BatchBuilder.append()`` returns for a record that fit (aiokafka's record metadata).

    ``offset`` is the record's offset within the batch, ``size`` the bytes it added (an
    estimate while a compressed batch is open), ``timestamp`` in ms; ``crc`` is None
    (a v2 batch has one CRC for all its records).
    """

    offset: int
    size: int
    timestamp: int
    crc: int | None = None


class PyHandleFields:
    """A :class:`DeliveryHandle`'s fields: the pure-Python twin of the C extension's
    ``HandleFields`` (its base class when built, so ``send()`` runs no ``__init__``)."""

    __slots__ = ("_batch", "_cancelled", "_index", "_timestamp")

    def __init__(self, batch: ProducerBatch, index: int, timestamp: int) -> None:
        self._batch = batch
        self._index = index
        self._timestamp = timestamp
        self._cancelled = False


if TYPE_CHECKING:
    _HandleFields = PyHandleFields
else:
    _HandleFields = native.HandleFields or PyHandleFields


class DeliveryHandle(_HandleFields):
    """The outcome of one ``send()``; ``await handle`` gives its RecordMetadata.

    It speaks asyncio's Future protocol (``asyncio.isfuture`` is true), so ``asyncio.wait``,
    ``gather`` and ``wait_for`` accept it as they accept aiokafka's future. Cancelling a
    handle only detaches the caller: the record was handed to the producer and is still
    delivered, as with a cancelled aiokafka future. With ``acks=0`` it resolves to None.
    ``DeliveryHandle(batch, index, timestamp)``: the record at ``index`` of ``batch``.
    """

    __slots__ = ()

    #: asyncio.isfuture() looks for this attribute (None would mean "not a future")
    _asyncio_future_blocking = False

    def _target(self) -> ProducerBatch:
        """The batch that holds this record now (it moves when a too-large batch is split)."""
        batch = self._batch
        if batch.split_into is None:
            return batch
        index = self._index
        while batch.split_into is not None:
            for first, part in reversed(batch.split_into):
                if index >= first:
                    batch, index = part, index - first
                    break
        self._batch, self._index = batch, index
        return batch

    @property
    def topic_partition(self) -> TopicPartition:
        """The partition the record was sent to."""
        return self._target().tp

    def done(self) -> bool:
        return self._cancelled or self._target().done

    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self, msg: Any = None) -> bool:
        """Stop waiting for this record (it is still delivered); False once it is done."""
        batch = self._target()
        if self._cancelled or batch.done:
            return False
        self._cancelled = True
        mine = [c for c in batch.callbacks if c[2] is self]
        batch.callbacks = [c for c in batch.callbacks if c[2] is not self]
        for _, fn, _arg in mine:
            fn(self)
        return True

    def get_loop(self) -> Any:
        """The event loop the record was sent on, as a Future keeps its loop
        (``asyncio.ensure_future`` and ``loop.run_until_complete`` check it)."""
        loop = self._target().loop
        return asyncio.get_running_loop() if loop is None else loop

    def exception(self) -> BaseException | None:
        if self._cancelled:
            raise _cancelled_error()
        batch = self._target()
        if not batch.done:
            raise _invalid_state()
        return batch.error

    def result(self) -> RecordMetadata:
        if self._cancelled:
            raise _cancelled_error()
        batch = self._target()
        if not batch.done:
            raise _invalid_state()
        if batch.error is not None:
            raise batch.error
        if batch.unacknowledged:
            return None  # type: ignore[return-value]  # acks=0: aiokafka's future gives None
        if batch.log_append_time >= 0:
            timestamp, kind = batch.log_append_time, LOG_APPEND_TIME
        else:
            timestamp, kind = self._timestamp, CREATE_TIME
        offset = batch.base_offset + self._index if batch.base_offset >= 0 else -1
        return RecordMetadata(
            batch.tp.topic, batch.tp.partition, batch.tp, offset, timestamp, kind, batch.log_start_offset
        )

    def add_done_callback(self, fn: Callable[[DeliveryHandle], Any], *, context: Any = None) -> None:
        """Call ``fn(handle)`` once the record is resolved (at once if it is)."""
        batch = self._target()
        if not self.done():
            batch.callbacks.append((self._index, fn, self))
            return
        loop = batch.loop
        if loop is None:  # not on asyncio (trio): nothing to schedule on
            fn(self)
        else:
            # as asyncio.Future does: asyncio.gather registers before it has its outer future
            loop.call_soon(fn, self, context=context)

    def remove_done_callback(self, fn: Callable[[DeliveryHandle], Any]) -> int:
        """Remove every registration of ``fn`` on this handle; the number removed."""
        batch = self._target()
        kept = [c for c in batch.callbacks if not (c[2] is self and c[1] == fn)]
        removed = len(batch.callbacks) - len(kept)
        batch.callbacks = kept
        return removed

    async def wait(self) -> RecordMetadata:
        batch = self._target()
        while not batch.done:
            await batch.settled()  # also when the batch is split: then follow the record
            batch = self._target()
        return self.result()

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        return self.wait().__await__()


def _cancelled_error() -> BaseException:
    return asyncio.CancelledError()


def _invalid_state() -> BaseException:
    return asyncio.InvalidStateError("delivery is still pending")


class ProducerBatch:
    """Records bound for one partition, sent (and retried) as one RecordBatch."""

    # Fields every new batch starts with, as class attributes: a batch is made per record at
    # linger 0, and each assignment in __init__ costs; an instance's own value shadows these.
    reserved = 0  # buffer_memory bytes held until the batch resolves
    sent = False  # drained at least once (split parts inherit it): a resend
    sent_to = -1  # the node it was last sent to
    attempts = 0  # failed sends so far
    sent_epoch = -2  # leader epoch the store knew when the batch was last sent
    last_failure = 0.0
    last_error: BaseException | None = None  # of the last failed send
    retry_at = 0.0  # earliest time of the next retry unless the epoch advanced
    base_sequence = -1
    producer_id = -1
    producer_epoch = -1
    transactional = False
    done = False
    error: BaseException | None = None
    base_offset = -1
    log_append_time = -1
    log_start_offset: int | None = None
    _settled: anyio.Event | None = None  # made by the first waiter; most batches have none
    unacknowledged = False  # acks=0: the broker sends no answer
    split_into: list[tuple[int, ProducerBatch]] | None = None  # (first record index, batch)

    def __init__(
        self, tp: TopicPartition, builder: RecordBatchBuilder, created_at: float | None = None
    ) -> None:
        self.tp = tp
        self.builder = builder
        self.created_at = time.monotonic() if created_at is None else created_at
        # the handles' loop, as a Future's (None off asyncio): get_loop() outside the loop
        self.loop = asyncio_loop()
        # A partition's batches in the order their records were sent (the parts of a split
        # batch, (n, 0), (n, 1), ..., sort between it and its successor): requeued batches go
        # back in this order.
        self.order: tuple[int, ...] = (next(_creation_order),)
        #: (record index, callback, its argument: the record's handle)
        self.callbacks: list[tuple[int, Callable[[Any], Any], Any]] = []

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
        index = self.builder.append(timestamp, key, value, headers)  # the record's offset delta
        return None if index is None else DeliveryHandle(self, index, timestamp)

    def close(self) -> None:
        if not self.builder.is_closed:
            self.builder.close()

    def payload(self) -> bytes:
        """The batch's bytes with its producer id, epoch and base sequence stamped in."""
        return b"".join(self.parts())

    def parts(self) -> tuple[bytes, bytes | memoryview]:
        """:meth:`payload` as (header, records), not joined: the request writes them in turn."""
        return self.builder.build_parts(
            self.producer_id, self.producer_epoch, self.base_sequence, is_transactional=self.transactional
        )

    async def settled(self) -> None:
        """Until this batch is resolved or split."""
        if not self.done and self.split_into is None:
            if self._settled is None:
                self._settled = anyio.Event()
            await self._settled.wait()

    def _wake_waiters(self) -> None:
        if self._settled is not None:
            self._settled.set()

    def first_error(self) -> BaseException | None:
        """The first failure among this batch's records (in the batches it was split into, if
        so); None if every one that resolved was written."""
        if self.split_into is None:
            return self.error
        for _, part in self.split_into:
            error = part.first_error()
            if error is not None:
                return error
        return None

    async def wait(self) -> None:
        """Until every record of this batch resolved (in the batches it was split into, if so)."""
        await self.settled()
        for _, part in self.split_into or ():
            await part.wait()

    def split(self, batch_size: int) -> list[ProducerBatch]:
        """This batch's records in smaller batches, at least two (needs two records or more).

        Each part holds at most ``min(batch_size, half this batch)`` bytes, so every split makes
        progress even when ``batch_size`` itself is over the broker's limit (Java splits to
        ``batch.size`` and can resend the same batch forever, KAFKA-8350). The parts keep the
        creation time (delivery_timeout_ms still counts from the first send()) and, if this
        batch had a sequence, the producer id, epoch and consecutive base sequences.
        """
        assert self.record_count > 1 and self.split_into is None
        records = RecordBatch(self.payload()).records()  # offsets 0..n-1: record i is handle i
        target = min(batch_size, max(self.builder.uncompressed_size // 2, HEADER_SIZE + 1))
        codec = self.builder.compression_type
        parts: list[ProducerBatch] = []
        firsts: list[int] = []
        for index, record in enumerate(records):
            row = (record.timestamp, record.key, record.value, record.headers)
            if not parts or parts[-1].builder.append(*row) is None:
                parts.append(ProducerBatch(self.tp, RecordBatchBuilder(codec, target), self.created_at))
                firsts.append(index)
                parts[-1].builder.append(*row)  # the first record always fits
        sequence = self.base_sequence
        for i, part in enumerate(parts):
            part.order = (*self.order, i)
            part.sent = self.sent
            part.close()
            part.reserved = self.reserved * part.record_count // self.record_count
            if sequence >= 0:
                part.producer_id, part.producer_epoch = self.producer_id, self.producer_epoch
                part.transactional = self.transactional  # still part of the same transaction
                part.base_sequence = sequence
                sequence += part.record_count
        parts[0].reserved += self.reserved - sum(p.reserved for p in parts)
        self.reserved = 0
        self.split_into = list(zip(firsts, parts, strict=True))
        callbacks, self.callbacks = self.callbacks, []
        for index, callback, arg in callbacks:
            first, part = next((f, p) for f, p in reversed(self.split_into) if index >= f)
            part.callbacks.append((index - first, callback, arg))
        self._wake_waiters()  # handles waiting here follow their record into its part
        return parts

    def _resolve(self) -> None:
        self.done = True
        self._wake_waiters()
        callbacks, self.callbacks = self.callbacks, []
        for _, callback, arg in callbacks:
            callback(arg)

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
