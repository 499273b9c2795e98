"""The transactional producer's requests to its coordinators, with retries.

Every call here goes to the transaction coordinator of the producer's transactional id
(FindCoordinator key type 1), except TxnOffsetCommit, which goes to the consumer group's
coordinator. The coordinator moving is invisible to the caller: NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS and a
dead connection are retried (the coordinator looked up again where that can help) until
``max_block_ms`` runs out. Any other error code is raised as its Kafka error; the
transaction manager decides whether it is fatal or abortable.

The transaction protocol version (KIP-890 part 2) is read from the coordinator's
ApiVersions: ``transaction.version`` >= 2 among the finalized features, EndTxn v5 and
Produce v12 make it version 2, anything less version 1.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio

from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.core.retry import call_with_retries
from aiokafka_lead.error_code import COORDINATOR_MOVED
from aiokafka_lead.errors import ConcurrentTransactionsError, KafkaConnectionError, error_for_code
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.producer.config import ProducerConfig
from aiokafka_lead.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from aiokafka_lead.requests.lookup import Lookups
from aiokafka_lead.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")

TRANSACTION_KEY = 1  # FindCoordinator key type of a transactional id
GROUP_KEY = 0
#: coordinator errors: look the coordinator up again before the retry
ADD_PARTITIONS_CLIENT_MAX = 3  # v4+ batch several transactions: brokers only
TV2_END_TXN = 5  # EndTxn v5 returns the bumped epoch (KIP-890 part 2)
TV2_PRODUCE = 12  # Produce v12 adds partitions to the transaction implicitly
TV2_TXN_OFFSET_COMMIT = 5  # TxnOffsetCommit v5 adds the group implicitly
TV1_PRODUCE_MAX = 11
FEATURE = "transaction.version"
CONCURRENT_TRANSACTIONS_BACKOFF_S = 0.02
QUICK_RETRIES = 5


def _version_of(conn: Connection) -> int:
    tables = conn.api_versions
    if (
        conn.finalized_features.get(FEATURE, 0) >= 2
        and tables is not None
        and tables.supports(EndTxnRequest.API_KEY)
        and tables.version_for(EndTxnRequest.API_KEY) >= TV2_END_TXN
        and tables.version_for(ProduceRequest.API_KEY) >= TV2_PRODUCE
    ):
        return 2
    return 1


class TxnRequests:
    """Requests to the transaction coordinator (and a group coordinator), retried within a deadline."""

    def __init__(
        self,
        core: ClientCore,
        config: ProducerConfig,
    ) -> None:
        assert config.transactional_id is not None
        self._core = core
        self._config = config
        self._backoff = core.backoff
        self._lookup = Lookups(core)
        self.coordinator_id: int | None = None
        self.coordinator_lookups = 0
        self.retries: dict[str, int] = {}

    # ------------------------------------------------------------------ plumbing
    @property
    def transactional_id(self) -> str:
        transactional_id = self._config.transactional_id
        assert transactional_id is not None  # checked at construction
        return transactional_id

    async def _retrying(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        async def quick() -> T:
            # CONCURRENT_TRANSACTIONS: the previous transaction's markers are still being
            # written, which takes milliseconds: retry soon (Java: 20 ms), not after retry_backoff_ms
            for n in itertools.count():
                try:
                    return await attempt()
                except ConcurrentTransactionsError:
                    if n >= QUICK_RETRIES:
                        raise
                    await anyio.sleep(CONCURRENT_TRANSACTIONS_BACKOFF_S)
            raise AssertionError("unreachable")

        return await call_with_retries(
            what,
            quick,
            timeout_ms=self._config.max_block_ms,
            backoff=self._backoff,
            refresh=self._core.refresh_metadata,
        )

    def _check(self, code: int, what: str, *, group: int | None = None) -> None:
        """Raise the error for ``code`` (from the group coordinator ``group``, else the transaction
        coordinator); coordinator moves become retriable and forget the node."""
        if not code:
            return
        source = f"node {self.coordinator_id if group is None else group}"
        error = error_for_code(code, f"{what} from {source}")
        if error.retriable:
            name = type(error).__name__
            self.retries[name] = self.retries.get(name, 0) + 1
            if code in COORDINATOR_MOVED and group is None:
                self.coordinator_id = None
        raise error

    async def _coordinator(self) -> int:
        if self.coordinator_id is None or self._core.store.node(self.coordinator_id) is None:
            self.coordinator_lookups += 1
            self.coordinator_id = await self._lookup.find_coordinator(self.transactional_id, TRANSACTION_KEY)
            log.debug("transactional id %s: coordinator node %d", self.transactional_id, self.coordinator_id)
        return self.coordinator_id

    async def _send(self, node_id: int, request: Any, version_for: Callable[[int], int]) -> tuple[Any, int]:
        """Send to ``node_id`` at the version ``version_for(negotiated)`` picks."""
        try:
            conn = await self._core.pool.connection(node_id)
            version = version_for(conn.version_for(request.API_KEY))
            return await conn.send(request, version=version), version
        except KafkaConnectionError:
            if node_id == self.coordinator_id:
                self.coordinator_id = None  # a dead coordinator: look it up again
            raise

    async def _send_to_coordinator(
        self, request: Any, version_for: Callable[[int], int] = lambda v: v
    ) -> tuple[Any, int]:
        """Send to the transaction coordinator (looked up first when not known)."""
        return await self._send(await self._coordinator(), request, version_for)

    async def transaction_version(self) -> int:
        """2 when the coordinator's cluster finalized ``transaction.version`` >= 2, else 1."""

        async def attempt() -> int:
            node = await self._coordinator()
            try:
                conn = await self._core.pool.connection(node)
            except KafkaConnectionError:
                self.coordinator_id = None
                raise
            return _version_of(conn)

        return await self._retrying("transaction version", attempt)

    def current_transaction_version(self) -> int | None:
        """The version the live coordinator connection allows now (None: no connection).

        Checked when a transaction begins, as the Java client does: a feature upgrade or
        downgrade takes effect at the next transaction after the coordinator reconnected.
        """
        if self.coordinator_id is None:
            return None
        conn = self._core.pool.live_connection(self.coordinator_id)
        if conn is None or conn.api_versions is None:
            return None
        return _version_of(conn)

    # ------------------------------------------------------------------ requests
    async def init_producer_id(self, producer_id: int = -1, producer_epoch: int = -1) -> tuple[int, int]:
        """InitProducerId with the transactional id: fences older instances, aborts their open
        transaction; with a current id and epoch (v3+) it bumps the epoch instead (KIP-360)."""

        request = InitProducerIdRequest(
            transactional_id=self.transactional_id,
            transaction_timeout_ms=self._config.transaction_timeout_ms,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )

        async def attempt() -> tuple[int, int]:
            response, _ = await self._send_to_coordinator(request)
            self._check(response.error_code, f"InitProducerId({self.transactional_id})")
            return int(response.producer_id), int(response.producer_epoch)

        return await self._retrying(f"InitProducerId({self.transactional_id})", attempt)

    async def add_partitions(
        self, partitions: list[TopicPartition], producer_id: int, producer_epoch: int
    ) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn (transaction version 1): the error code per partition (0: added).

        A partition-level retriable error (CONCURRENT_TRANSACTIONS, ...) retries the whole
        request; other codes are returned for the transaction manager to judge.
        """
        topics: dict[str, list[int]] = {}
        for tp in partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)

        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.transactional_id,
            v3_and_below_producer_id=producer_id,
            v3_and_below_producer_epoch=producer_epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps)
                for t, ps in topics.items()
            ],
        )

        async def attempt() -> dict[TopicPartition, int]:
            response, _ = await self._send_to_coordinator(
                request, lambda v: min(v, ADD_PARTITIONS_CLIENT_MAX)
            )
            out: dict[TopicPartition, int] = {}
            for t in response.results_by_topic_v3_and_below:
                for p in t.results_by_partition:
                    out[TopicPartition(t.name, p.partition_index)] = p.partition_error_code
            retry = [c for c in out.values() if c and error_for_code(c).retriable]
            if retry:
                self._check(retry[0], "AddPartitionsToTxn")
            return out

        return await self._retrying(f"AddPartitionsToTxn({self.transactional_id})", attempt)

    async def add_offsets(self, group_id: str, producer_id: int, producer_epoch: int) -> None:
        """AddOffsetsToTxn (transaction version 1): the group's offsets join the transaction."""

        request = AddOffsetsToTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            group_id=group_id,
        )

        async def attempt() -> None:
            response, _ = await self._send_to_coordinator(request)
            self._check(response.error_code, f"AddOffsetsToTxn({group_id})")

        await self._retrying(f"AddOffsetsToTxn({self.transactional_id}, {group_id})", attempt)

    async def txn_offset_commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        group: ConsumerGroupMetadata,
        producer_id: int,
        producer_epoch: int,
        txn_version: int,
    ) -> None:
        """TxnOffsetCommit to the group's coordinator, with the member's generation (KIP-447)."""
        topics: dict[str, list[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition]] = {}
        for tp, om in offsets.items():
            topics.setdefault(tp.topic, []).append(
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=om.offset,
                    committed_leader_epoch=om.leader_epoch if om.leader_epoch is not None else -1,
                    committed_metadata=om.metadata,
                )
            )
        group_node: list[int] = []

        def version_for(negotiated: int) -> int:
            return negotiated if txn_version >= 2 else min(negotiated, TV2_TXN_OFFSET_COMMIT - 1)

        async def attempt() -> None:
            if not group_node:
                group_node.append(await self._lookup.find_coordinator(group.group_id, GROUP_KEY))
            request = TxnOffsetCommitRequest(
                transactional_id=self.transactional_id,
                group_id=group.group_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                generation_id_or_member_epoch=group.generation_id,
                member_id=group.member_id,
                group_instance_id=group.group_instance_id,
                topics=[
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t, partitions=ps)
                    for t, ps in topics.items()
                ],
            )
            try:
                response, _ = await self._send(group_node[0], request, version_for)
            except KafkaConnectionError:
                group_node.clear()
                raise
            codes = [p.error_code for t in response.topics for p in t.partitions if p.error_code]
            if codes:
                node = group_node[0]
                if codes[0] in COORDINATOR_MOVED:
                    group_node.clear()
                self._check(codes[0], f"TxnOffsetCommit({group.group_id})", group=node)

        await self._retrying(f"TxnOffsetCommit({self.transactional_id}, {group.group_id})", attempt)

    async def end_txn(
        self, *, commit: bool, producer_id: int, producer_epoch: int, txn_version: int
    ) -> tuple[int, int]:
        """EndTxn; returns the (producer id, epoch) to use next (bumped under version 2)."""

        def version_for(negotiated: int) -> int:
            return negotiated if txn_version >= 2 else min(negotiated, TV2_END_TXN - 1)

        request = EndTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            committed=commit,
        )

        async def attempt() -> tuple[int, int]:
            response, version = await self._send_to_coordinator(request, version_for)
            self._check(response.error_code, f"EndTxn({'commit' if commit else 'abort'})")
            if version >= TV2_END_TXN:  # checked by the transaction manager before use
                return int(response.producer_id), int(response.producer_epoch)
            return producer_id, producer_epoch

        what = f"EndTxn({self.transactional_id}, {'commit' if commit else 'abort'})"
        return await self._retrying(what, attempt)
