"""RecordAccumulator: per-partition batch queues between ``send()`` and the sender.

* ``append`` fills the partition's open batch (a new one when full), reserving
  ``buffer_memory``; when the buffer is full it waits up to ``max_block_ms`` (backpressure),
  then raises a clear error.
* ``drain`` is the sender's synchronous decision step: which batches go to which leader
  now, and when to look again. An idempotent producer may have several batches of a
  partition in flight (``partition_in_flight``, max_in_flight_requests_per_connection),
  otherwise one; either way per-partition order survives retries and leader moves
  (DESIGN.md invariants 11 and 24), while other partitions on the same broker keep flowing.
* Retries (KIP-951): a failed batch returns to the head of its queue (in send order behind
  other resends). It goes out AT ONCE
  if the store's leader epoch for its partition has advanced since it was sent (a hint or
  a Metadata response said so); otherwise after its exponential, jittered backoff. With
  hints disabled (pre-KIP-951 behaviour) it also waits for a metadata refresh.
* ``delivery_timeout_ms`` bounds every batch from its creation, across all retries.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import anyio
import anyio.lowlevel

from aiokafka_lead.errors import KafkaTimeoutError
from aiokafka_lead.metadata import BrokerNode, MetadataStore
from aiokafka_lead.producer.batch import DeliveryHandle, ProducerBatch
from aiokafka_lead.producer.config import ProducerConfig
from aiokafka_lead.producer.retry_policy import NOT_YET, retry_ready_at
from aiokafka_lead.records import RecordBatchBuilder
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.wakeup import Wakeup

RECORD_OVERHEAD = 70  # varints, attributes and header-count per record, generously


def estimate_record_size(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]]
) -> int:
    size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
    for name, hvalue in headers:
        size += len(name.encode()) + (len(hvalue) if hvalue else 0) + 10
    return size


@dataclass(slots=True)
class DrainResult:
    by_node: dict[int, list[ProducerBatch]] = field(default_factory=dict)
    expired: list[ProducerBatch] = field(default_factory=list)
    next_check_s: float | None = None  # when something may become sendable; None: nothing pending
    pipelined: int = 0  # batches sent while an earlier batch of their partition is in flight
    # a partition whose batch was taken has another queued: a drain at once may take it too
    # (one batch per partition per drain); otherwise only a wake-up or next_check_s can
    more: bool = False

    def wake_in(self, delay: float) -> None:
        delay = max(delay, 0.0)
        self.next_check_s = delay if self.next_check_s is None else min(self.next_check_s, delay)


_NO_HOLDS: Mapping[int, float] = MappingProxyType({})

#: a backlogged partition's batch may grow to this many times max_batch_size (DESIGN.md 23)
BACKLOG_FACTOR = 64


class RecordAccumulator:
    def __init__(
        self,
        config: ProducerConfig,
        *,
        on_batch_closed: Callable[[TopicPartition], None] = lambda tp: None,
        sticky: Mapping[str, int] | None = None,
    ) -> None:
        """``on_batch_closed(tp)`` hears of a closed batch: of every one, or with ``sticky``
        (per topic, the partition keyless records go to now: the partitioner's own map) only
        of a batch of one of those partitions (the only closes that move a sticky choice)."""
        self._config = config
        # Partitions whose leader was a pipelining (far) node at the last drain: their batches
        # keep max_batch_size until the pipeline window is full (_backlogged, DESIGN.md 23).
        self._far: set[TopicPartition] = set()
        self._on_batch_closed = on_batch_closed
        self._sticky = sticky
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._in_flight: dict[TopicPartition, list[ProducerBatch]] = {}
        self._incomplete: set[ProducerBatch] = set()
        self._buffer_used = 0
        self._freed: anyio.Event | None = None
        self._flushing = 0
        # sticky: a wake between drain() and wait_for_work() is not lost
        self._wakeup = Wakeup(keep_timer=True)
        # from the sender's last pass: the nodes it holds new batches for, until when (hold())
        self._holds: dict[int, float] = {}
        # from the last drain(): nodes a queued batch waits for a request of to end (in-flight
        # limits, lane 0), and nodes natural batching holds a batch for (send() adds to it)
        self._waits_for_end: set[int] = set()
        self._held_for: set[int] = set()
        self._leader_for: Callable[[TopicPartition], BrokerNode | None] = lambda tp: None
        self.closed = False

    @property
    def backlog_batch_size(self) -> int:
        """A backlogged partition (its batch in flight, or a batch already waiting) may grow
        its next batch this far, so each round trip carries more of the backlog (DESIGN.md 23)."""
        batch_size = self._config.max_batch_size
        return max(batch_size, min(BACKLOG_FACTOR * batch_size, self._config.max_request_size))

    # ------------------------------------------------------------------ wake-ups
    def wake(self) -> None:
        self._wakeup.set()

    def hold(
        self, holds: dict[int, float], leader_for: Callable[[TopicPartition], BrokerNode | None]
    ) -> None:
        """After each pass the sender says which nodes natural batching holds new batches for
        and until when (monotonic; ``math.inf``: until one of the node's requests ends, whose
        end wakes the sender). A new batch for such a node then wakes the sender when the
        hold ends instead of at once: a pass before that would hold it too, and under a
        steady load most passes would find nothing to send."""
        self._holds = holds
        self._leader_for = leader_for

    def request_ended(self, node_id: int, hold_until: float | None) -> bool:
        """A request to ``node_id`` ended, its batches resolved or requeued; the node is held
        until ``hold_until`` now (None: not held). True when the sender's next pass would
        send more than its last one did: a queued batch waited for a request of the node to
        end, or one is held for the node and its hold ended; the caller then passes (or
        wakes the sender). A hold that now ends sooner wakes the sender then."""
        held_until = self._holds.get(node_id)
        if hold_until is None:
            self._holds.pop(node_id, None)
        else:
            self._holds[node_id] = hold_until
        if node_id in self._waits_for_end:
            return True
        if node_id in self._held_for:
            if hold_until is None or held_until is None:
                return True
            if hold_until < held_until:
                self._wakeup.set_at(hold_until)
        return False

    def next_pass_at(self, when: float) -> None:
        """A pass ran outside the sender's loop (Sender._pass_now): the loop, asleep, is due
        to pass again at ``when`` (``time.monotonic()``; inf: only when woken), not when its
        own last pass said."""
        self._wakeup.retime(when)

    def _wake_for(self, tp: TopicPartition) -> None:
        """Wake the sender for ``tp``'s new batch, the only one queued: at once, or when the
        hold of its leader ends (drain()'s natural batching holds it until then)."""
        if self._holds and not self._flushing and not self.closed:
            leader = self._leader_for(tp)
            if leader is not None:
                until = self._holds.get(leader.node_id)
                if until is not None:
                    self._held_for.add(leader.node_id)
                    if until != math.inf:
                        self._wakeup.set_at(until)
                    return
        self._wakeup.set()

    async def wait_for_work(self, timeout_s: float | None) -> None:
        """The sender sleeps here until woken or ``timeout_s`` passes."""
        await self._wakeup.wait(timeout_s)
        self._wakeup.clear()

    # ------------------------------------------------------------------- append
    @property
    def buffer_used(self) -> int:
        return self._buffer_used

    @property
    def pending_batches(self) -> int:
        return len(self._incomplete)

    async def reserve(self, size: int) -> None:
        limit = self._config.buffer_memory
        if size > limit:
            raise ValueError(f"record of ~{size} bytes is larger than buffer_memory={limit}")
        if self._buffer_used + size <= self._config.buffer_memory:
            self._buffer_used += size
            return
        try:
            with anyio.fail_after(self._config.max_block_s):
                while self._buffer_used + size > self._config.buffer_memory:
                    if self._freed is None:
                        self._freed = anyio.Event()
                    await self._freed.wait()
        except TimeoutError:
            raise KafkaTimeoutError(
                f"buffer_memory ({self._config.buffer_memory} bytes) stayed full for max_block_ms "
                f"({self._config.max_block_s * 1000:.0f} ms): the brokers are not keeping up"
            ) from None
        self._buffer_used += size

    def _release(self, batch: ProducerBatch) -> None:
        self._buffer_used -= batch.reserved
        batch.reserved = 0
        if self._freed is not None:
            self._freed.set()
            self._freed = None

    async def append(
        self,
        tp: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]],
        *,
        size: int | None = None,
    ) -> DeliveryHandle:
        if size is None:
            size = estimate_record_size(key, value, headers)
        placed = self.append_now(tp, timestamp, key, value, headers, size)
        if placed is None:
            await self.reserve(size)
            placed = self.append_now(tp, timestamp, key, value, headers, size, reserved=True)
        assert placed is not None  # reserved: always placed
        handle, filled = placed
        if filled:
            # A tight send() loop never suspends otherwise: let the sender ship the full batch
            # now, so the broker works on it while we fill the next one. Not a cancellation
            # point: the record is queued, so send() must return its handle (a cancelled send()
            # whose record still goes out would be resent by the caller: a duplicate).
            await anyio.lowlevel.cancel_shielded_checkpoint()
        return handle

    def append_now(  # noqa: PLR0917 - the per-record hot path: positional on purpose
        self,
        tp: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]],
        size: int,
        reserved: bool = False,
    ) -> tuple[DeliveryHandle, bool] | None:
        """:meth:`append` without a coroutine: the record into its partition's open batch, or
        a new one. ``None`` (and nothing changed) when the buffer has no room for ``size``
        (unless the caller ``reserved`` it). Returns the record's handle and whether it
        filled the open batch (then the caller gives the event loop a turn first)."""
        if not reserved:
            if self._buffer_used + size > self._config.buffer_memory:
                return None
            self._buffer_used += size
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        if queue and not queue[-1].closed:
            batch = queue[-1]
            handle = batch.try_append(timestamp, key, value, headers)
            if handle is not None:
                batch.reserved += size
                return handle, False
            batch.close()
            self._report_close(tp)
            self.wake()
            filled = True
        else:
            filled = False
        limit = self.backlog_batch_size if self._backlogged(tp, queue) else self._config.max_batch_size
        batch = ProducerBatch(tp, RecordBatchBuilder(self._config.compression, limit))
        handle = batch.try_append(timestamp, key, value, headers)
        assert handle is not None  # the first record always fits
        batch.reserved = size
        queue.append(batch)
        self._incomplete.add(batch)
        if len(queue) == 1:
            self._wake_for(tp)  # the sender sends it (linger 0) or schedules its linger deadline
        else:
            self.wake()  # an earlier batch is waiting (and full, or a retry): urgent
        return handle, filled

    def _report_close(self, tp: TopicPartition) -> None:
        sticky = self._sticky
        if sticky is None or sticky.get(tp.topic) == tp.partition:
            self._on_batch_closed(tp)

    def _backlogged(self, tp: TopicPartition, queue: deque[ProducerBatch]) -> bool:
        """May the partition's next batch grow to ``backlog_batch_size`` (DESIGN.md 23)?

        Toward a near node: when a batch of it is already waiting or in flight. Toward a far
        (pipelining) node only once its pipeline window is full (``partition_in_flight``
        batches waiting or in flight): the window's batches keep ``max_batch_size``, so
        after a leader move each request carries every partition's oldest records, while a
        backlog deeper than the window (a send() loop faster than the brokers) still grows."""
        ahead = len(queue) + len(self._in_flight.get(tp, ()))
        if tp in self._far:
            return ahead >= self._config.partition_in_flight
        return ahead > 0

    # -------------------------------------------------------------------- drain
    def _ready_at(self, batch: ProducerBatch, queue_len: int, store: MetadataStore, hints: bool) -> float:
        if batch.attempts:
            return retry_ready_at(
                retry_at=batch.retry_at,
                hints=hints,
                sent_epoch=batch.sent_epoch,
                leader_epoch=store.leader_epoch(batch.tp),
                last_refresh=store.last_refresh or 0.0,
                last_failure=batch.last_failure,
            )
        if batch.closed or queue_len > 1 or self._flushing or self.closed:
            return 0.0
        return batch.created_at + self._config.linger_s

    def drain(
        self,
        store: MetadataStore,
        max_request_size: int,
        *,
        hints: bool,
        busy_nodes: Mapping[int, float] = _NO_HOLDS,
        held: Collection[TopicPartition] = (),
        unverified: Collection[TopicPartition] = (),
        lane0_out: Collection[int] = (),
        pipelining: Collection[int] = (),
        confirmed: Collection[TopicPartition] = (),
    ) -> DrainResult:
        """Pick the batches to send now, grouped by leader node (synchronous decision step).

        Natural batching: while a request to a node is in flight (``busy_nodes``: until when,
        ``math.inf``: until a request of it ends), that node's new batches wait for it unless
        they are full, backlogged or being flushed. A broker handles one request per
        connection at a time, so a second small request would only queue behind the first;
        waiting lets the next request carry everything at once. Retries (the KIP-951
        immediate ones too) to a node held until a request ends (near, on one connection,
        or with as many requests out as it may have) go in the next request to it: with the
        batches this drain sends it, or once its request ends; to any other node at once.
        After a leader move the partitions fail at their old leader at different moments,
        and sent one by one to the new leader each request would wait behind the one before
        for its own round of the followers' fetches; joining a request that goes anyway, a
        retry never waits behind full batches pipelined to a busy node.
        ``held`` partitions are not sent yet (not yet added to the producer's transaction);
        ``unverified`` ones (in the transaction, nothing acknowledged yet) wait while their
        leader has a request out on lane 0 (``lane0_out``), so they go on lane 0 (lanes.py).
        A partition may have several batches in flight only to a ``pipelining`` node, all to
        the same one, once its leader has confirmed our producer state (``confirmed``) and,
        in a transaction, a batch of the partition was acknowledged (not ``unverified``: the
        first one waits for the broker's check with the coordinator, KIP-890).
        """
        now = time.monotonic()
        result = DrainResult()
        sizes: dict[int, int] = {}
        timeout_s = self._config.delivery_timeout_s
        urgent_all = bool(self._flushing) or self.closed
        leader_for = store.leader_for
        far_set = self._far
        expires_in: float | None = None  # the first queued batch's delivery timeout
        waits_for_end: set[int] = set()
        held_for: set[int] = set()
        # resends held for a node until a request of it ends: they join the request this
        # drain sends it, if any
        riders: dict[int, list[tuple[deque[ProducerBatch], ProducerBatch, list[ProducerBatch] | None]]] = {}
        for tp, queue in self._queues.items():
            if not queue or tp in held:
                continue
            batch = queue[0]
            left = batch.created_at + timeout_s - now
            if left <= 0:
                queue.popleft()
                result.expired.append(batch)
                continue
            if expires_in is None or left < expires_in:
                expires_in = left
            leader = leader_for(tp)
            if leader is None:
                store.request_refresh(f"no leader known for {tp.topic}-{tp.partition}")
                result.wake_in(0.05)
                continue
            node_id = leader.node_id
            far = node_id in pipelining
            if far:
                far_set.add(tp)
            elif far_set:
                far_set.discard(tp)
            # Natural batching first, the cheapest test: a new, non-full batch for a busy
            # node waits, whatever its linger says (the request's completion wakes the sender).
            rides = False
            if node_id in busy_nodes:
                if batch.attempts:  # a resend waits only for a node held until a request ends
                    rides = not urgent_all and busy_nodes[node_id] == math.inf
                elif not (urgent_all or len(queue) > 1 or batch.builder.is_closed):
                    held_for.add(node_id)
                    continue
            ready_at = self._ready_at(batch, len(queue), store, hints)
            if ready_at == NOT_YET:
                result.wake_in(0.02)
                continue
            if ready_at > now:
                result.wake_in(ready_at - now)
                continue
            flying = self._in_flight.get(tp)
            if flying and not (
                far
                and tp in confirmed
                and tp not in unverified
                and _may_pipeline(batch, flying, node_id, self._config.partition_in_flight)
            ):
                waits_for_end.add(node_id)
                continue  # a completion wakes the sender
            if tp in unverified and node_id in lane0_out:
                waits_for_end.add(node_id)
                continue  # the lane-0 request's completion wakes the sender
            if rides:  # it goes with whatever else goes to the node now, or waits
                riders.setdefault(node_id, []).append((queue, batch, flying))
                continue
            self._take(result, sizes, max_request_size, node_id, queue, batch, flying)
        for node_id, waiting in riders.items():
            if node_id not in result.by_node:
                held_for.add(node_id)
                continue
            for queue, batch, flying in waiting:
                self._take(result, sizes, max_request_size, node_id, queue, batch, flying)
        if expires_in is not None:
            result.wake_in(expires_in)
        self._waits_for_end, self._held_for = waits_for_end, held_for
        return result

    def _take(  # noqa: PLR0917 - drain()'s state, positional on the hot path
        self,
        result: DrainResult,
        sizes: dict[int, int],
        max_request_size: int,
        node_id: int,
        queue: deque[ProducerBatch],
        batch: ProducerBatch,
        flying: list[ProducerBatch] | None,
    ) -> None:
        """Move ``batch``, the head of ``queue``, into the request drain() builds for
        ``node_id``, unless that would make the request larger than ``max_request_size``
        (then the next pass takes it)."""
        batch_bytes = batch.builder.size_in_bytes()
        used = sizes.get(node_id, 0)
        if used and used + batch_bytes > max_request_size:
            result.wake_in(0)
            return
        sizes[node_id] = used + batch_bytes
        queue.popleft()
        if queue:
            result.more = True
        if not batch.closed:
            batch.close()
            self._report_close(batch.tp)
        batch.sent = True
        batch.sent_to = node_id
        if flying:
            result.pipelined += 1
        self._in_flight.setdefault(batch.tp, []).append(batch)
        result.by_node.setdefault(node_id, []).append(batch)

    def _landed(self, batch: ProducerBatch) -> bool:
        """The batch is no longer in flight; False if it was not."""
        flying = self._in_flight.get(batch.tp)
        if flying is None or batch not in flying:
            return False
        flying.remove(batch)
        if not flying:
            del self._in_flight[batch.tp]
        return True

    def earlier_unresolved(self, batch: ProducerBatch) -> bool:
        """Is a batch sent before ``batch`` for its partition still in flight or queued for a
        resend? Then a broker that saw ``batch`` without it answers OUT_OF_ORDER_SEQUENCE_NUMBER
        and ``batch`` only has to wait for it."""
        earlier = itertools.chain(self._in_flight.get(batch.tp, ()), self._queues.get(batch.tp, ()))
        return any(b is not batch and b.sent and b.order < batch.order for b in earlier)

    # ---------------------------------------------------------------- outcomes
    def finished(self, batch: ProducerBatch) -> None:
        """The batch resolved (success or failure): free its memory, count it landed."""
        flew = self._landed(batch)
        self._incomplete.discard(batch)
        self._release(batch)
        if not flew:  # one that flew: the end of its request decides (request_ended())
            self.wake()

    def requeue(self, batch: ProducerBatch) -> None:
        """Put a failed batch back for a retry: before every batch not yet sent, in send order
        among the other resends (pipelined batches of a partition may fail in any order)."""
        self._landed(batch)
        queue = self._queues.setdefault(batch.tp, deque())
        queue.insert(_resend_position(queue, batch), batch)
        self.wake()

    def split_and_requeue(self, batch: ProducerBatch) -> list[ProducerBatch]:
        """MESSAGE_TOO_LARGE: the batch's records go back, in smaller batches, at the head of
        its partition's queue, in order, as if never sent (Java's ``splitAndReenqueue``). Its
        buffer memory moves to the parts."""
        parts = batch.split(self._config.max_batch_size)
        self._landed(batch)
        self._incomplete.discard(batch)
        self._incomplete.update(parts)
        queue = self._queues.setdefault(batch.tp, deque())
        at = _resend_position(queue, batch)
        for part in reversed(parts):
            queue.insert(at, part)
        self.wake()
        return parts

    async def flush(self) -> None:
        """Send everything now and wait until every batch that exists now has resolved."""
        waiting = list(self._incomplete)
        self._flushing += 1
        self.wake()
        try:
            for batch in waiting:
                await batch.wait()
        finally:
            self._flushing -= 1

    def fail_all(self, error: BaseException) -> int:
        """Fail every unresolved batch, queued or in flight (on close); returns how many."""
        for queue in self._queues.values():
            queue.clear()
        pending = list(self._incomplete)
        for batch in pending:
            batch.fail(error)
            self.finished(batch)
        return len(pending)

    def abort_undrained(
        self, error: BaseException, partitions: Collection[TopicPartition] | None = None
    ) -> int:
        """Fail every batch not yet sent (of ``partitions``, default all): an aborted transaction."""
        failed = 0
        for tp, queue in self._queues.items():
            if partitions is not None and tp not in partitions:
                continue
            while queue:
                batch = queue.popleft()
                batch.fail(error)
                self._incomplete.discard(batch)
                self._release(batch)
                failed += 1
        self.wake()
        return failed

    def enqueue_built(self, tp: TopicPartition, builder: RecordBatchBuilder, reserved: int) -> ProducerBatch:
        """Queue a batch the user filled (``send_batch``) as it is, behind the partition's open batch."""
        queue = self._queues.setdefault(tp, deque())
        if queue and not queue[-1].closed:
            queue[-1].close()
        batch = ProducerBatch(tp, builder)
        batch.close()
        batch.reserved = reserved
        queue.append(batch)
        self._incomplete.add(batch)
        self.wake()
        return batch

    def queued(self, tp: TopicPartition) -> list[ProducerBatch]:
        """The partition's batches waiting to be sent, in order."""
        return list(self._queues.get(tp, ()))

    def in_flight_count(self, tp: TopicPartition) -> int:
        return len(self._in_flight.get(tp, ()))

    def in_flight_partitions(self) -> set[TopicPartition]:
        return set(self._in_flight)


def _resend_position(queue: deque[ProducerBatch], batch: ProducerBatch) -> int:
    """Where a resend of ``batch`` goes: after the resends sent before it, before the rest."""
    at = 0
    while at < len(queue) and queue[at].sent and queue[at].order < batch.order:
        at += 1
    return at


def _may_pipeline(batch: ProducerBatch, flying: list[ProducerBatch], node_id: int, limit: int) -> bool:
    """May ``batch`` go to ``node_id`` while ``flying`` (its partition's batches in flight) are out?

    Only after every batch in flight (all older than it: it overtakes none), to the node they
    went to, below the partition's limit. That holds for a first send and for a resend behind
    the older resends (after a leader move, a partition's retried batches follow each other
    to the new leader instead of one per round trip). A split batch's part waits until
    nothing of its partition is in flight."""
    order = batch.order
    if len(order) != 1 or len(flying) >= limit:
        return False
    for earlier in flying:  # noqa: SIM110 - a loop, not all(): at every drain of a busy partition
        if earlier.sent_to != node_id or not earlier.order < order:
            return False
    return True
