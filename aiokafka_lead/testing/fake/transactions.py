"""The fake cluster's transaction coordinator (KIP-98, KIP-447, KIP-890 part 2).

Synchronous, like the rest of the fake: EndTxn writes its COMMIT/ABORT markers to every
partition of the transaction and moves the transaction's offsets into the group before it
answers, so a test sees a completed transaction as soon as the client's call returns.
``transaction_version`` is the finalized feature level ApiVersions reports: 2 (Kafka 4.x
default) lets clients use Produce v12 / EndTxn v5, where the epoch is bumped on every
EndTxn and partitions join a transaction by being produced to.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.testing.fake.core import ClusterCore
from aiokafka_lead.testing.fake.epochs import PRODUCER_EPOCH, epoch_error
from aiokafka_lead.testing.fake.groups import CommittedOffset, GroupCoordinator

TV2_END_TXN = 5
TV2_PRODUCE = 12
EMPTY, ONGOING, COMPLETE_COMMIT, COMPLETE_ABORT = "Empty", "Ongoing", "CompleteCommit", "CompleteAbort"


@dataclass(slots=True)
class Transaction:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str = EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    #: group id -> offsets committed in this transaction, applied by a COMMIT
    offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = field(default_factory=dict)
    #: version 2: (epoch the last EndTxn was sent with, its result), to answer its retry
    last_end: tuple[int, bool] | None = None


class TxnCoordinator:
    """Every transactional id of the cluster (each answered only by its coordinator node);
    a committed transaction's offsets go to ``groups``."""

    def __init__(self, cluster: ClusterCore, groups: GroupCoordinator) -> None:
        self._cluster = cluster
        self._groups = groups
        self.transactions: dict[str, Transaction] = {}
        self.transaction_version = 2
        self.markers_written = 0

    def is_coordinator(self, node_id: int, transactional_id: str) -> bool:
        return self._cluster.coordinator_for(transactional_id, 1) == node_id

    def by_producer(self, producer_id: int) -> Transaction | None:
        return next((t for t in self.transactions.values() if t.producer_id == producer_id), None)

    # ----------------------------------------------------------------- requests
    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, producer_id: int, producer_epoch: int
    ) -> tuple[int, int, int]:
        """(error, id, epoch): a new id, or the next epoch of the existing one (fencing it);
        an open transaction of the old epoch is aborted first."""
        txn = self.transactions.get(transactional_id)
        if txn is None:
            txn = Transaction(transactional_id, self._cluster.next_producer_id(), 0, timeout_ms)
            self.transactions[transactional_id] = txn
            return ErrorCode.NONE, txn.producer_id, txn.producer_epoch
        if producer_id >= 0 and (producer_id, producer_epoch) != (txn.producer_id, txn.producer_epoch):
            return ErrorCode.PRODUCER_FENCED, -1, -1  # a KIP-360 bump from an instance fenced meanwhile
        txn.timeout_ms = timeout_ms
        txn.producer_epoch += 1
        if txn.state == ONGOING:
            self._complete(txn, commit=False)
        txn.state = EMPTY
        txn.last_end = None
        return ErrorCode.NONE, txn.producer_id, txn.producer_epoch

    def _verified(self, transactional_id: str, producer_id: int, producer_epoch: int) -> Transaction | int:
        """The producer's transaction, or the error its producer id and epoch earn."""
        txn = self.transactions.get(transactional_id)
        error = self._check_epoch(txn, producer_id, producer_epoch)
        return error if error or txn is None else txn

    def _check_epoch(self, txn: Transaction | None, producer_id: int, producer_epoch: int) -> int:
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        return epoch_error(producer_epoch, txn.producer_epoch, PRODUCER_EPOCH)

    def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[tuple[str, int]]
    ) -> int:
        txn = self._verified(transactional_id, producer_id, producer_epoch)
        if isinstance(txn, int):
            return txn
        for tp in partitions:
            if self._cluster.find_partition(*tp) is None:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        txn.partitions.update(partitions)
        txn.state = ONGOING
        return ErrorCode.NONE

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> int:
        txn = self._verified(transactional_id, producer_id, producer_epoch)
        if isinstance(txn, int):
            return txn
        txn.offsets.setdefault(group_id, {})
        txn.state = ONGOING
        return ErrorCode.NONE

    def txn_offset_commit(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        offsets: dict[tuple[str, int], CommittedOffset],
        *,
        implicit: bool,
    ) -> int:
        txn = self._verified(transactional_id, producer_id, producer_epoch)
        if isinstance(txn, int):
            return txn
        if group_id not in txn.offsets:
            if not implicit:
                return ErrorCode.INVALID_TXN_STATE  # version 1 needs AddOffsetsToTxn first
            txn.offsets[group_id] = {}
            txn.state = ONGOING
        txn.offsets[group_id].update(offsets)
        return ErrorCode.NONE

    def produce_check(self, transactional_id: str | None, producer_id: int, producer_epoch: int,
                      tp: tuple[str, int], version: int) -> int:
        """A transactional batch: version 2 (Produce v12) adds the partition, version 1 needs
        it added already (KIP-890 part 1 verification)."""
        txn = self.transactions.get(transactional_id or "")
        error = self._check_epoch(txn, producer_id, producer_epoch)
        if error == ErrorCode.PRODUCER_FENCED:
            return ErrorCode.INVALID_PRODUCER_EPOCH  # what a partition leader answers a fenced producer
        if error:
            return error
        assert txn is not None
        if tp in txn.partitions:
            return ErrorCode.NONE
        if version >= TV2_PRODUCE and self.transaction_version >= 2:
            txn.partitions.add(tp)
            txn.state = ONGOING
            return ErrorCode.NONE
        return ErrorCode.INVALID_TXN_STATE

    def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, version: int
    ) -> tuple[int, int, int]:
        """(error, producer id, epoch to use next)."""
        txn = self.transactions.get(transactional_id)
        tv2 = version >= TV2_END_TXN and self.transaction_version >= 2
        if txn is not None and tv2 and txn.last_end == (producer_epoch, commit) and (
            txn.producer_epoch == producer_epoch + 1
        ):
            return ErrorCode.NONE, txn.producer_id, txn.producer_epoch  # a retry of the last EndTxn
        error = self._check_epoch(txn, producer_id, producer_epoch)
        if error:
            return error, -1, -1
        assert txn is not None
        if txn.state != ONGOING and not (tv2 and not commit):
            if not tv2 and txn.state == (COMPLETE_COMMIT if commit else COMPLETE_ABORT):
                return ErrorCode.NONE, txn.producer_id, txn.producer_epoch  # a retry (version 1)
            return ErrorCode.INVALID_TXN_STATE, -1, -1
        if tv2:
            txn.producer_epoch += 1  # KIP-890: every EndTxn bumps the epoch
            txn.last_end = (producer_epoch, commit)
        self._complete(txn, commit=commit)
        return ErrorCode.NONE, txn.producer_id, txn.producer_epoch

    def _complete(self, txn: Transaction, *, commit: bool) -> None:
        now = int(time.time() * 1000)
        for tp in sorted(txn.partitions):
            part = self._cluster.find_partition(*tp)
            if part is not None:
                part.write_marker(txn.producer_id, txn.producer_epoch, commit=commit, timestamp_ms=now)
                self.markers_written += 1
        if commit:
            for group_id, offsets in txn.offsets.items():
                self._groups.group(group_id).offsets.update(offsets)
        txn.partitions.clear()
        txn.offsets.clear()
        txn.state = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        self._cluster.notify()

    def abort_open(self, transactional_id: str) -> None:
        """Abort the open transaction as the coordinator does when it times out (bumps the epoch)."""
        txn = self.transactions[transactional_id]
        txn.producer_epoch += 1
        if txn.state == ONGOING:
            self._complete(txn, commit=False)
