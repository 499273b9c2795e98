"""PartitionRecords: lazy draining, compaction gaps, control batches, read_committed."""

from __future__ import annotations

from aiokafka_lead.consumer.buffer import PartitionRecords
from aiokafka_lead.records import ControlRecordType, RecordBatchBuilder, build_control_batch
from aiokafka_lead.structs import TopicPartition

TP = TopicPartition("t", 0)


def data_batch(base: int, values: list[bytes], *, pid: int = -1, transactional: bool = False) -> bytes:
    builder = RecordBatchBuilder(is_transactional=transactional, base_offset=base)
    for i, v in enumerate(values):
        builder.append(1_700_000_000_000 + i, None, v, ())
    return builder.build(pid, 0 if pid >= 0 else -1, 0 if pid >= 0 else -1, partition_leader_epoch=3)


def marker(base: int, pid: int, kind: ControlRecordType) -> bytes:
    return build_control_batch(
        kind, producer_id=pid, producer_epoch=0, timestamp_ms=1_700_000_000_000, base_offset=base
    )


def drain(pr: PartitionRecords, step: int = 100) -> list[int]:
    out: list[int] = []
    while not pr.exhausted:
        got = pr.take(step)
        out.extend(r.offset for r, _, _ in got)
        if not got and not pr.exhausted:
            raise AssertionError("no progress")
    return out


def test_drains_from_the_position_in_steps() -> None:
    data = data_batch(0, [b"a", b"b", b"c"]) + data_batch(3, [b"d", b"e"])
    pr = PartitionRecords(TP, data, fetch_offset=1, generation=0)
    first = pr.take(2)
    assert [(r.offset, epoch) for r, _, epoch in first] == [(1, 3), (2, 3)]
    assert pr.next_offset == 3 and pr.next_epoch == 3
    assert drain(pr, 1) == [3, 4]
    assert pr.next_offset == 5


def test_read_committed_skips_aborted_and_markers() -> None:
    data = (
        data_batch(0, [b"t1a", b"t1b"], pid=7, transactional=True)
        + data_batch(2, [b"t2a"], pid=8, transactional=True)
        + marker(3, 7, ControlRecordType.ABORT)
        + marker(4, 8, ControlRecordType.COMMIT)
        + data_batch(5, [b"plain"])
    )
    committed = PartitionRecords(
        TP, data, fetch_offset=0, generation=0, aborted=[(7, 0)], read_committed=True
    )
    assert drain(committed) == [2, 5]
    assert committed.next_offset == 6
    uncommitted = PartitionRecords(TP, data, fetch_offset=0, generation=0)
    assert drain(uncommitted) == [0, 1, 2, 5]  # markers are never handed out
