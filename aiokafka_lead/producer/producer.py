"""AIOKafkaProducer: aiokafka's public API, with KIP-951 leader discovery underneath.

Defaults follow the modern Java client where aiokafka's are unsafe: ``acks="all"`` and
idempotence on (it turns itself off, as in Java, only when acks is set to 0 or 1 without
asking for idempotence explicitly).
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Self

import anyio
import anyio.abc
import anyio.lowlevel

from aiokafka_lead.config.arguments import check_headers, check_partition, check_timestamp, check_topic
from aiokafka_lead.config.options import is_async_callable
from aiokafka_lead.core.client import ClientCore, guarded
from aiokafka_lead.core.telemetry_api import TelemetryAPI
from aiokafka_lead.errors import (
    IllegalOperation,
    IllegalStateError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    ProducerClosed,
    error_for_code,
)
from aiokafka_lead.metadata import HintOutcome
from aiokafka_lead.producer.accumulator import (
    RECORD_OVERHEAD,
    RecordAccumulator,
    estimate_record_size,
)
from aiokafka_lead.producer.batch import BatchAppendMetadata, DeliveryHandle, ProducerBatch
from aiokafka_lead.producer.compat import ProducerCompat, TopicView
from aiokafka_lead.producer.config import ACKS_UNSET, ProducerConfig
from aiokafka_lead.producer.idempotence import IdempotenceState
from aiokafka_lead.producer.keywords import ProducerKeywords
from aiokafka_lead.producer.metrics import ProducerMetrics, ProducerMetricSource
from aiokafka_lead.producer.partitioner import DefaultPartitioner, Partitioner, key_partitions
from aiokafka_lead.producer.sender import Sender
from aiokafka_lead.producer.transaction import TransactionContext, TransactionManager
from aiokafka_lead.producer.txn_requests import TxnRequests
from aiokafka_lead.records import RecordBatchBuilder, native
from aiokafka_lead.records.builder import ArrowBinary
from aiokafka_lead.runtime import ClientClosedError, ClientFailedError, ExitOnLeave, weakly
from aiokafka_lead.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

Headers = Sequence[tuple[str, bytes | None]]
#: per topic, what send() needs: (store version, all partitions, partitions with a known
#: leader, the TopicPartition of each partition id)
NO_HEADERS: tuple[tuple[str, bytes | None], ...] = ()
YIELD_EVERY_MASK = 0x1FF  # send() gives the event loop a turn every 512 records at least
#: a topic's TopicPartitions are made at once up to this many partitions, as records go to
#: them above (a million objects would cost every full garbage collection)
EAGER_TOPIC_PARTITIONS = 10_000


def _shown(partitions: list[int]) -> str:
    """A topic's partitions in an error message: all of a few, the range of many."""
    if len(partitions) <= 20:
        return str(partitions)
    return f"{len(partitions)} of them, {partitions[0]}..{partitions[-1]}"
#: aiokafka's path of its ``acks`` default marker (frameworks import it to pass ``acks`` on unset)
_missing = ACKS_UNSET


def _py_now_ms() -> int:
    return time.time_ns() // 1_000_000


#: a record's default timestamp: wall-clock ms (the C extension's clock read when built)
_now_ms: Callable[[], int] = native.now_ms or _py_now_ms


async def _serialized(serializer: Any, data: Any, topic: str, headers: list[tuple[str, bytes | None]]) -> Any:
    """``data`` through ``serializer``: an async one awaited with the topic and headers."""
    if serializer is None or data is None:
        return data
    out = serializer(data, topic, headers) if is_async_callable(serializer) else serializer(data)
    return await out if inspect.isawaitable(out) else out


class BatchBuilder:
    """A batch the caller fills and sends whole (aiokafka's ``create_batch`` API)."""

    def __init__(self, builder: RecordBatchBuilder, key_serializer: Any, value_serializer: Any) -> None:
        self._builder = builder
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._closed = False
        self.reserved = 0
        self._sent: ProducerBatch | None = None  # the producer's batch, once sent

    def append(
        self, *, key: Any = None, value: Any = None, timestamp: int | None = None, headers: Headers = ()
    ) -> BatchAppendMetadata | None:
        """Add a record: its metadata, or None when the batch is full (which closes it) or closed."""
        if self._closed:
            return None
        k = self._key_serializer(key) if self._key_serializer and key is not None else key
        v = self._value_serializer(value) if self._value_serializer and value is not None else value
        ts = int(time.time() * 1000) if timestamp is None else check_timestamp(timestamp)
        header_list = check_headers(headers)
        for name, data in (("key", k), ("value", v)):
            if data is not None and not isinstance(data, bytes):
                raise TypeError(f"{name} must be bytes (or set {name}_serializer), not {type(data).__name__}")
        before = self._builder.size_in_bytes()
        delta = self._builder.append(ts, k, v, header_list)
        if delta is None:
            self._closed = True
            return None
        self.reserved += estimate_record_size(k, v, header_list)
        return BatchAppendMetadata(delta, self._builder.size_in_bytes() - before, ts)

    def append_column(
        self,
        rows: int,
        values: ArrowBinary | None,
        keys: ArrowBinary | None,
        start: int = 0,
        *,
        timestamp: int | None = None,
    ) -> int:
        """Rows ``start``.. of Arrow binary columns (``RecordBatchBuilder.append_column``'s
        form) as records without headers, their bytes as they are (no serializer runs); the
        first row not appended, below ``rows`` when the batch filled up (it is then closed).
        For writers that hold columns, such as the Spark sink: no Python object per row."""
        if self._closed:
            return start
        ts = int(time.time() * 1000) if timestamp is None else check_timestamp(timestamp)
        before = self._builder.size_in_bytes()
        end: int = self._builder.append_column(ts, rows, values, keys, start)
        self.reserved += self._builder.size_in_bytes() - before
        if end < rows:
            self._closed = True
        return end

    @property
    def topic_partition(self) -> TopicPartition | None:
        """Where ``send_batch`` sent it (None before)."""
        return None if self._sent is None else self._sent.tp

    async def delivered(self) -> None:
        """After ``send_batch``: wait until every record of the batch resolved, also when the
        producer split it (too large for the broker), and raise the first failure. The
        handle ``send_batch`` returns follows only the first record."""
        if self._sent is None:
            raise IllegalStateError("delivered() of a batch that send_batch() has not sent")
        await self._sent.wait()
        error = self._sent.first_error()
        if error is not None:
            raise error

    def close(self) -> None:
        """No more records: later ``append()`` calls return None (sending is not affected)."""
        self._closed = True

    def closed(self) -> bool:
        return self._closed

    def record_count(self) -> int:
        return self._builder.record_count

    def size(self) -> int:
        return self._builder.size_in_bytes()


class AIOKafkaProducer(ProducerKeywords, ProducerCompat, TelemetryAPI, ExitOnLeave):
    """Asyncio Kafka producer (aiokafka-compatible)."""

    def _configure(self, config: ProducerConfig) -> None:
        """Build the producer's parts from its configuration (the constructor's keywords are
        :class:`ProducerKeywords`')."""
        self._needs_close = False  # first: a constructor that fails leaves nothing to close
        self._config = config
        if config.async_serializers:
            # the serializers run before send(), which then takes bytes in (its hot path);
            # held weakly, so a producer dropped unclosed is still collected at once
            self.send = weakly(self._send_awaiting_serializers, None)  # type: ignore[method-assign,arg-type]
        self._partitioner: Partitioner = config.partitioner or DefaultPartitioner()
        self._default_partitioner = (
            self._partitioner if isinstance(self._partitioner, DefaultPartitioner) else None
        )
        self._topics: set[str] = set()
        self._metrics = ProducerMetrics()
        topics = self._topics
        # what the background tasks get holds no reference to the producer (runtime.weakly)
        self._core = ClientCore(
            "AIOKafkaProducer",
            config,
            topics=lambda: topics,
            allow_auto_topic_creation=True,
            client_type="producer",
        )
        sticky = self._default_partitioner.sticky_choices if self._default_partitioner is not None else {}
        self._acc = RecordAccumulator(config, on_batch_closed=weakly(self._batch_closed, None), sticky=sticky)
        acc = self._acc
        tid = config.transactional_id
        self._core.telemetry_resource = lambda: [("transactional_id", tid)] if tid is not None else []
        self._core.metrics.add(
            ProducerMetricSource(self._metrics, lambda: acc.buffer_used, config.buffer_memory)
        )
        self._ids: IdempotenceState | None = None
        self._txn: TransactionManager | None = None
        self._appended = 0
        #: send()'s common case in C once started (``_send_path``): a handle, ``(handle,)``
        #: when send() yields first, or None for the Python path
        self._fast_append: Callable[[str, bytes | None, bytes | None, int | None], Any] | None = None
        self._closed = False
        self._core.on_failure(weakly(self._on_failure, None))
        self._running = False  # True between a successful start and stop
        self._store = self._core.store
        # per topic, cached until the metadata changes (a TopicPartition per send() would cost
        # a NamedTuple each)
        self._views: dict[str, TopicView] = {}
        self._needs_close = True  # from here on, dropping it unclosed warns (as aiokafka's)

    # ----------------------------------------------------------------- lifecycle
    async def _setup(self, tg: anyio.abc.TaskGroup) -> None:
        if self._config.idempotent:
            self._ids = IdempotenceState(self._core, self._config)
            if self._config.transactional_id is None:
                await self._ids.init()
        if self._config.transactional_id is not None and self._ids is not None:
            self._txn = TransactionManager(TxnRequests(self._core, self._config), self._ids, self._acc)
            await self._txn.init()
            await tg.start(self._txn.run)
        sender = Sender(
            self._core,
            self._acc,
            self._config,
            idempotence=self._ids,
            metrics=self._metrics,
            transaction=self._txn,
        )
        await tg.start(sender.run)
        self._fast_append = self._send_path()
        self._running = True

    def _send_path(self) -> Callable[[str, bytes | None, bytes | None, int | None], Any] | None:
        """send()'s common case in one C call (``_speedups_send.c``), where it applies: bytes
        in without serializers, the default partitioner, no transaction."""
        if (
            native.SendPath is None
            or self._default_partitioner is None
            or self._txn is not None
            or not self._config.send_takes_bytes
        ):
            return None
        path = native.SendPath(
            views=self._views,
            store=self._store,
            accumulator=self._acc,
            sticky=self._default_partitioner.checked_choices,
            handle_type=DeliveryHandle,
            buffer_memory=self._config.buffer_memory,
            max_request_size=self._config.max_request_size,
            record_overhead=RECORD_OVERHEAD,
            yield_mask=YIELD_EVERY_MASK,
        )
        append: Callable[[str, bytes | None, bytes | None, int | None], Any] = path.append
        return append

    def _on_failure(self, error: ClientFailedError) -> None:
        """A background task failed: every pending delivery fails with that cause, no more sends."""
        self._running = False
        self._acc.closed = True
        self._acc.fail_all(error)

    async def start(self) -> None:
        """Connect, fetch metadata, get a producer id (idempotence) and start the sender."""
        self._core.extra_setup = self._setup
        await self._begin(self._core.start)

    async def _begin(self, start: Callable[[], Awaitable[None]]) -> None:
        self._needs_close = True
        try:
            await start()
        except BaseException:
            self._needs_close = False  # the core closed itself: nothing is left open
            raise

    async def stop(self) -> None:
        """Flush what was sent, then close; every pending delivery is resolved."""
        if self._closed:
            return
        self._closed = True
        self._needs_close = False
        self._running = False
        try:
            if self._core.host.running:
                await self._acc.flush()  # bounded: batches expire after delivery_timeout_ms
        finally:
            self._acc.closed = True
            await self._core.close()
            self._acc.fail_all(ProducerClosed("the producer was stopped before delivery"))

    async def __aenter__(self) -> Self:
        self._core.extra_setup = self._setup
        await self._begin(self._core.enter)
        return self

    def __del__(self) -> None:
        if getattr(self, "_needs_close", False):
            warnings.warn(f"Unclosed AIOKafkaProducer {self!r}", ResourceWarning, source=self, stacklevel=1)
            self._core.close_abandoned()

    async def _exit(self, exc: BaseException | None) -> None:
        await self.stop()

    # ------------------------------------------------------------------- sending
    def _check_open(self) -> None:
        if not self._running:
            if self._core.host.failure() is not None:
                raise self._core.host.failed_error()
            if self._closed:
                raise ProducerClosed("the producer is stopped")
            raise ClientClosedError("the producer is not running (call start() or use async with)")

    def _batch_closed(self, tp: TopicPartition) -> None:
        # Called by the accumulator only for a sticky partition of the default partitioner
        # (its ``sticky`` map): the choice moves. The available partitions cost a leader
        # lookup each: only if send()'s cached view of the topic is out of date.
        partitioner = self._default_partitioner
        assert partitioner is not None
        view = self._views.get(tp.topic)
        if view is not None and view[0] == self._store.version:
            available = view[2]
        else:
            available = self._available(tp.topic)
        partitioner.batch_closed(tp.topic, tp.partition, available)

    def _available(self, topic: str) -> list[int]:
        return self._core.store.available_partitions(topic)

    @guarded
    async def partitions_for(self, topic: str) -> set[int]:
        """The topic's partition ids, waiting (up to max_block_ms) for its metadata."""
        self._check_open()
        check_topic(topic)
        store = self._core.store
        if topic not in self._topics or store.partitions_for_topic(topic) is None:
            self._topics.add(topic)
            await self._core.wait_for_topics([topic], self._config.max_block_ms)
        parts = store.partitions_for_topic(topic)
        if parts is None:
            code = store.topic_error(topic)
            if code:
                source = store.topic_error_source(topic)
                raise error_for_code(code, f"Metadata for topic {topic!r} from {source}")
            raise KafkaTimeoutError(
                f"topic {topic!r} not present in metadata after {self._config.max_block_ms} ms"
            )
        return parts

    async def _topic_view(self, topic: str) -> TopicView:
        """The topic's partitions as send() uses them, cached until the metadata changes."""
        await self.partitions_for(topic)  # waits for the topic's metadata, or raises
        return self._cache_view(topic)

    async def _cached_view(self, topic: str) -> TopicView:
        """:meth:`_topic_view`, from the cache while the metadata is unchanged."""
        view = self._views.get(topic)
        if view is None or view[0] != self._store.version:
            view = await self._topic_view(topic)
        return view

    def _cache_view(self, topic: str) -> TopicView:
        all_parts = self._store.partition_list(topic)
        old = self._views.get(topic)
        if old is not None and len(old[1]) == len(all_parts):
            tps = old[3]  # the same partitions (numbered 0..N-1): their TopicPartitions stay
        elif len(all_parts) <= EAGER_TOPIC_PARTITIONS:
            tps = {p: TopicPartition(topic, p) for p in all_parts}
        else:  # a huge topic: made as records go to them (an object each would cost the GC)
            tps = {}
        view = self._views[topic] = (self._store.version, all_parts, self._available(topic), tps)
        return view

    @staticmethod
    def _view_tp(topic: str, view: TopicView, partition: int) -> TopicPartition:
        """The TopicPartition of one of the view's partitions (ValueError if it is not one)."""
        _, all_parts, _, tps = view
        tp = tps.get(partition)
        if tp is not None:
            return tp
        numbered = type(partition) is int and 0 <= partition < len(all_parts)
        if not numbered or all_parts[partition] != partition:
            shown = _shown(all_parts)
            raise ValueError(f"topic {topic!r} has no partition {partition!r} (partitions: {shown})")
        tp = tps[partition] = TopicPartition(topic, partition)
        return tp

    def _serialize(self, key: Any, value: Any) -> tuple[bytes | None, bytes | None]:
        """send()'s slow path (its hot path already took bytes in without serializers)."""
        key_serializer, value_serializer = self._config.key_serializer, self._config.value_serializer
        k = key_serializer(key) if key_serializer is not None and key is not None else key
        v = value_serializer(value) if value_serializer is not None and value is not None else value
        for name, data in (("key", k), ("value", v)):
            if data is not None and not isinstance(data, bytes | bytearray | memoryview):
                raise TypeError(f"{name} must be bytes (or set {name}_serializer), not {type(data).__name__}")
        return (bytes(k) if k is not None else None), (bytes(v) if v is not None else None)

    async def _send_awaiting_serializers(  # noqa: PLR0917 - send()'s signature
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
    ) -> DeliveryHandle:
        """send() when a serializer is async: an async serializer is awaited with the topic and
        the record's header list (to which it may add its schema-id header), a sync one called
        as usual, then send() takes the bytes."""
        if not self._running:
            self._check_open()  # raises
        check_topic(topic)
        header_list = list(headers or ())
        key_bytes = await _serialized(self._config.key_serializer, key, topic, header_list)
        value_bytes = await _serialized(self._config.value_serializer, value, topic, header_list)
        for name, data in (("key", key_bytes), ("value", value_bytes)):
            if data is not None and not isinstance(data, bytes):
                raise TypeError(f"{name} must be bytes (or set {name}_serializer), not {type(data).__name__}")
        return await AIOKafkaProducer.send(
            self, topic, value_bytes, key_bytes, partition, timestamp_ms, header_list or None
        )

    async def send(  # noqa: PLR0917 - aiokafka's positional signature
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
    ) -> DeliveryHandle:
        """Queue one record; returns a handle that resolves to its RecordMetadata.

        Waits only for the topic's metadata (first send) and for buffer space, each up to
        max_block_ms. Records over max_request_size fail here, before anything is queued.
        """
        if not self._running:
            self._check_open()  # raises
        fast = self._fast_append
        if fast is not None and partition is None and headers is None:
            handle = fast(topic, key, value, timestamp_ms)  # None: not the common case, nothing changed
            if handle is not None:
                if type(handle) is not tuple:
                    return handle  # type: ignore[no-any-return]
                await anyio.lowlevel.cancel_shielded_checkpoint()  # as below
                return handle[0]  # type: ignore[no-any-return]
        # every argument is checked before anything changes (arguments.py); a topic with a
        # cached view was checked before
        view = self._views.get(topic) if type(topic) is str else None
        if view is None:
            check_topic(topic)
        if partition is not None:
            check_partition(partition)
        if timestamp_ms is not None:
            check_timestamp(timestamp_ms)
        plain = self._config.send_takes_bytes
        if plain and (key is None or type(key) is bytes) and (value is None or type(value) is bytes):
            key_bytes, value_bytes = key, value  # the hot path: bytes in, nothing to convert
        else:
            key_bytes, value_bytes = self._serialize(key, value)
        header_list: Sequence[tuple[str, bytes | None]]
        if headers is not None and (header_list := check_headers(headers)):
            size = estimate_record_size(key_bytes, value_bytes, header_list)
        else:  # the same estimate, inlined
            header_list = NO_HEADERS
            size = RECORD_OVERHEAD + (len(key_bytes) if key_bytes else 0)
            size += len(value_bytes) if value_bytes else 0
        if size > self._config.max_request_size:
            raise MessageSizeTooLargeError(
                f"the record is ~{size} bytes, larger than max_request_size={self._config.max_request_size}"
            )
        if view is None or view[0] != self._store.version:
            view = await self._topic_view(topic)
        _, all_parts, available, tps = view
        if partition is None:
            if self._default_partitioner is not None:
                partition = self._default_partitioner.partition(topic, key_bytes, all_parts, available)
            else:
                partition = self._partitioner(key_bytes, all_parts, available)
        tp = tps.get(partition)
        if tp is None:  # the caller's choice, a custom partitioner's, or a huge topic's
            tp = self._view_tp(topic, view, partition)
        timestamp = _now_ms() if timestamp_ms is None else timestamp_ms
        txn = self._txn
        if txn is not None and not txn.holds(tp):
            txn.add_partition(tp)  # raises outside a transaction
        placed = self._acc.append_now(tp, timestamp, key_bytes, value_bytes, header_list, size)
        if placed is not None:  # the common case: no second coroutine
            handle, filled = placed
            self._appended += 1
            if filled or not self._appended & YIELD_EVERY_MASK:
                # A send() loop never suspends otherwise: let the sender ship the batches that
                # are full or whose linger ran out meanwhile. Shielded: the record is queued, so
                # send() must return its handle (a cancelled send() whose record still goes
                # out would be resent by the caller: a duplicate).
                await anyio.lowlevel.cancel_shielded_checkpoint()
            return handle
        with self._core.host.guard():  # waits for buffer space: a background failure ends it
            return await self._acc.append(tp, timestamp, key_bytes, value_bytes, header_list, size=size)

    async def send_and_wait(  # noqa: PLR0917 - aiokafka's positional signature
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
    ) -> Any:
        handle = await self.send(topic, value, key, partition, timestamp_ms, headers)
        return await handle

    def create_batch(self) -> BatchBuilder:
        return self._batch_builder(self._config.max_batch_size)

    def create_backlog_batch(self) -> BatchBuilder:
        """:meth:`create_batch` with room for a backlog: up to 64x ``max_batch_size``
        (``max_request_size`` at most), as ``send()``'s batches grow behind one in flight
        (DESIGN.md invariant 23). For a writer that hands over many records at once (the
        Spark sink): the brokers' cost is per batch as much as per byte."""
        return self._batch_builder(self._acc.backlog_batch_size)

    def _batch_builder(self, size: int) -> BatchBuilder:
        if self._config.async_serializers:
            raise TypeError(
                "create_batch() calls serializers synchronously: with an async serializer, "
                "append bytes to a batch of a producer without serializers"
            )
        return BatchBuilder(
            RecordBatchBuilder(self._config.compression, size),
            self._config.key_serializer,
            self._config.value_serializer,
        )

    @guarded
    async def send_batch(self, batch: BatchBuilder, topic: str, *, partition: int | None) -> DeliveryHandle:
        """Send a filled batch to one partition as it is; resolves with its first record's metadata.

        ``partition=None`` lets the partitioner choose, as for a record without a key."""
        self._check_open()
        check_topic(topic)
        if partition is not None:
            check_partition(partition)
        if batch.record_count() == 0:
            raise ValueError("the batch is empty")
        if batch.size() > self._config.max_request_size:
            raise MessageSizeTooLargeError(f"the batch is {batch.size()} bytes, over max_request_size")
        view = await self._cached_view(topic)
        _, all_parts, available, _ = view
        if partition is None:
            partition = self._partitioner(None, all_parts, available)
        tp = self._view_tp(topic, view, partition)
        if self._txn is not None:
            self._txn.add_partition(tp)
        await self._acc.reserve(batch.reserved)
        queued = batch._sent = self._acc.enqueue_built(tp, batch._builder, batch.reserved)
        return queued.handle()

    async def key_column_partitions(self, topic: str, keys: ArrowBinary, rows: int) -> bytes | None:
        """Where the default partitioner puts each key of an Arrow binary key column
        (``BatchBuilder.append_column``'s form): int32 partitions, -1 for a null key (placed
        when sent); None with a custom partitioner. For columnar writers (the Spark sink)."""
        if self._default_partitioner is None:
            return None
        _, all_parts, _, _ = await self._cached_view(topic)
        return key_partitions(keys, rows, len(all_parts))

    @guarded
    async def flush(self) -> None:
        """Send everything queued now and wait until it resolved (bound it with a cancel scope)."""
        self._check_open()
        await self._acc.flush()

    # -------------------------------------------------------------- transactions
    def _transaction_manager(self) -> TransactionManager:
        self._check_open()
        if self._txn is None:
            raise IllegalOperation("transactions need a producer created with transactional_id=")
        return self._txn

    async def begin_transaction(self) -> None:
        """Start a transaction: every record sent until commit/abort belongs to it.

        Nothing goes to the broker here (the partitions join the transaction as records are
        sent); it is ``async`` like aiokafka's, so ``await producer.begin_transaction()``.
        """
        self._transaction_manager().begin()

    async def commit_transaction(self) -> None:
        """Deliver every record of the transaction, then commit it (EndTxn)."""
        await self._transaction_manager().commit()

    async def abort_transaction(self) -> None:
        """Drop unsent records and abort the transaction; read_committed consumers never see it."""
        await self._transaction_manager().abort()

    async def send_offsets_to_transaction(
        self,
        offsets: dict[TopicPartition, OffsetAndMetadata | int],
        group_id: str | ConsumerGroupMetadata,
    ) -> None:
        """Commit consumer offsets as part of the transaction (consume-transform-produce).

        ``group_id`` may be the consumer's ``group_metadata()``: the group coordinator then
        rejects the commit of a consumer fenced by a rebalance (KIP-447).
        """
        await self._transaction_manager().send_offsets(offsets, group_id)

    def transaction(self) -> TransactionContext:
        """``async with producer.transaction():`` begin; commit on success, abort on error."""
        return TransactionContext(self._transaction_manager)

    # ----------------------------------------------------------------- insight
    def metrics(self) -> dict[str, Any]:
        """Counters: records, retries, leader hints applied/ignored by reason, refreshes by reason,
        SASL re-authentications (KIP-368) and connections closed by brokers; under ``"kafka"``
        the Java client's metrics by group (``kafka_metrics()``, docs/observability.md)."""
        store = self._core.store
        m = self._metrics
        return {
            **self._core.connection_metrics(),
            "records_sent": m.records_sent,
            "records_failed": m.records_failed,
            "batches_sent": m.batches_sent,
            "batches_retried": m.batches_retried,
            "immediate_retries": m.immediate_retries,
            "batches_expired": m.batches_expired,
            "batches_split": m.batches_split,
            "produce_requests": m.produce_requests,
            "express_requests": m.express_requests,
            "pipelined_batches": m.pipelined_batches,
            "errors": dict(m.errors),
            "leader_hints_applied": store.hint_outcomes[HintOutcome.APPLIED],
            "leader_hints_ignored": {
                o.value: n for o, n in store.hint_outcomes.items() if o is not HintOutcome.APPLIED and n
            },
            "metadata_refresh_requests": dict(store.refresh_requests),
            "metadata_refreshes": self._core.refresher.refreshes if self._core.host.running else None,
            "request_latency": {node: s.as_dict() for node, s in m.request_latency.items()},
            "buffer_used": self._acc.buffer_used,
            "pending_batches": self._acc.pending_batches,
            "producer_id": self._ids.producer_id if self._ids else -1,
            "producer_epoch": self._ids.producer_epoch if self._ids else -1,
            "epoch_bumps": self._ids.epoch_bumps if self._ids else 0,
            **(self._txn.metrics() if self._txn is not None else {}),
            "kafka": self._core.metrics.read().by_group(),
        }


Producer = AIOKafkaProducer
