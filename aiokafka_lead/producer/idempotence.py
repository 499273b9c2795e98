"""Idempotent producer state: producer id, epoch and per-partition sequence numbers.

Sequences are assigned when a batch is first drained (in drain order) and kept across its
retries, so a retried batch the broker already wrote is deduplicated, and batches of a
partition pipelined behind one that failed are refused with OUT_OF_ORDER_SEQUENCE_NUMBER
and resent after it (the sender tells that case apart; DESIGN.md invariant 24). Otherwise
OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID mean the broker lost our producer
state: then the epoch is bumped (KIP-360, InitProducerId with the current id and epoch)
and sequences restart at 0.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.core.retry import call_with_retries
from aiokafka_lead.errors import error_for_code
from aiokafka_lead.producer.batch import ProducerBatch
from aiokafka_lead.producer.config import ProducerConfig
from aiokafka_lead.protocol.messages import InitProducerIdRequest
from aiokafka_lead.structs import TopicPartition

log = logging.getLogger(__name__)

MAX_SEQUENCE = 0x7FFFFFFF


class IdempotenceState:
    def __init__(self, core: ClientCore, config: ProducerConfig) -> None:
        self._core = core
        self._config = config
        self._backoff = core.backoff
        self.producer_id = -1
        self.producer_epoch = -1
        self.needs_bump = False
        self.epoch_bumps = 0
        self._sequences: dict[TopicPartition, int] = {}
        # partitions with a batch acknowledged at the current id and epoch: their leader has
        # our producer state, so it refuses a sequence gap (a leader without it accepts any
        # first sequence, so a later batch could overtake an earlier one there)
        self.confirmed: set[TopicPartition] = set()
        self.transactional = False  # batches are stamped as transactional (KIP-98)

    async def init(self, reason: str = "start") -> None:
        """InitProducerId (any broker; no transactional id): a new id, or a bumped epoch."""

        async def attempt() -> tuple[int, int]:
            conn = await self._core.any_connection()
            version = conn.version_for(InitProducerIdRequest.API_KEY)
            bump = self.producer_id >= 0 and version >= 3
            request = InitProducerIdRequest(
                transactional_id=None,
                transaction_timeout_ms=-1,
                producer_id=self.producer_id if bump else -1,
                producer_epoch=self.producer_epoch if bump else -1,
            )
            response = await conn.send(request, version=version)
            if response.error_code:
                raise error_for_code(response.error_code, f"InitProducerId from {conn.broker}")
            return int(response.producer_id), int(response.producer_epoch)

        self.producer_id, self.producer_epoch = await call_with_retries(
            f"InitProducerId ({reason})",
            attempt,
            timeout_ms=self._config.max_block_ms,
            backoff=self._backoff,
            refresh=self._core.refresh_metadata,
        )
        self._sequences.clear()
        self.confirmed.clear()
        self.needs_bump = False
        log.debug("producer id %d epoch %d (%s)", self.producer_id, self.producer_epoch, reason)

    def adopt(self, producer_id: int, producer_epoch: int, *, transactional: bool) -> None:
        """Use an id and epoch the transaction coordinator handed out; sequences restart."""
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self.transactional = transactional
        self._sequences.clear()
        self.confirmed.clear()
        self.needs_bump = False

    async def bump_epoch(self) -> None:
        self.epoch_bumps += 1
        await self.init("epoch bump after lost producer state (KIP-360)")

    def acknowledged(self, batch: ProducerBatch) -> None:
        if (batch.producer_id, batch.producer_epoch) == (self.producer_id, self.producer_epoch):
            self.confirmed.add(batch.tp)

    def stamp(self, batch: ProducerBatch) -> None:
        """Give a batch its sequence the first time it is sent (or after an epoch bump)."""
        if batch.producer_epoch == self.producer_epoch and batch.producer_id == self.producer_id:
            return
        batch.producer_id = self.producer_id
        batch.producer_epoch = self.producer_epoch
        batch.transactional = self.transactional
        base = self._sequences.get(batch.tp, 0)
        batch.base_sequence = base
        self._sequences[batch.tp] = (base + batch.record_count) & MAX_SEQUENCE

    def give_back(self, batch: ProducerBatch, queued: Iterable[ProducerBatch]) -> None:
        """``batch`` was refused and never written (MESSAGE_TOO_LARGE): its sequences are free
        again, so the partition's stamped queued batches (its split siblings) move down by its
        record count, as Java's ``adjustSequencesDueToFailedBatch`` does; else the next one
        would leave a gap (OUT_OF_ORDER_SEQUENCE_NUMBER)."""
        if batch.base_sequence < 0 or (batch.producer_id, batch.producer_epoch) != (
            self.producer_id,
            self.producer_epoch,
        ):
            return  # stamped under an older epoch: sequences restart after the bump anyway
        n = batch.record_count
        for other in queued:
            same = (other.producer_id, other.producer_epoch) == (self.producer_id, self.producer_epoch)
            if same and other.base_sequence >= 0:
                other.base_sequence = (other.base_sequence - n) & MAX_SEQUENCE
        self._sequences[batch.tp] = (self._sequences.get(batch.tp, n) - n) & MAX_SEQUENCE
