"""The Spark sink's writer on the fake cluster: rows from Arrow record batches, by the
columnar path (no headers; a partition column, or no key) and by send()'s (headers, keys the
partitioner hashes), each row once, in order per partition, a failure naming its partition."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
import pytest

pa = pytest.importorskip("pyarrow", reason="install aiokafka_lead[spark]")
pytest.importorskip("pyspark", reason="install aiokafka_lead[spark]")

from aiokafka_lead.producer.partitioner import partition_for_key  # noqa: E402
from aiokafka_lead.spark import writer  # noqa: E402
from aiokafka_lead.spark.bridge import clients  # noqa: E402
from aiokafka_lead.spark.options import SourceOptions  # noqa: E402
from aiokafka_lead.testing.fake import FakeCluster  # noqa: E402

DEADLINE = 30


def log(fc: FakeCluster, topic: str, partition: int) -> list[tuple[bytes | None, bytes | None, int]]:
    """(key, value, header count) of every record in a partition's log, in order."""
    return [(key, value, len(headers)) for _, key, value, headers in fc.records((topic, partition))]


@pytest.fixture
def columns_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a test whose rows take send()'s path instead of the columnar one."""

    async def no_send(*_: Any) -> None:
        raise AssertionError("rows went through send(), not the columnar path")

    monkeypatch.setattr(writer, "_send", no_send)


async def write(fc: FakeCluster, batches: list[Any], topic: str | None = "t") -> int:
    opts = SourceOptions(bootstrap_servers=fc.bootstrap, properties=(), topic=topic)
    try:
        result = await anyio.to_thread.run_sync(writer.write_batches, opts, iter(batches))
    finally:
        await anyio.to_thread.run_sync(clients.close_all)
    return int(result.records)


@pytest.mark.usefixtures("columns_only")
async def test_rows_without_keys_go_by_columns_each_once() -> None:
    values = [b"v%04d" % i for i in range(3000)] + [None]
    batch = pa.RecordBatch.from_pydict({"value": pa.array(values, type=pa.binary())})
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=3, replication_factor=1)
            assert await write(fc, [batch.slice(0, 1000), batch.slice(1000)]) == 3001
            got = [r for p in range(3) for r in log(fc, "t", p)]
    assert sorted(v for _, v, _ in got if v is not None) == sorted(v for v in values if v is not None)
    assert sum(1 for _, v, _ in got if v is None) == 1 and all(k is None for k, _, _ in got)


@pytest.mark.usefixtures("columns_only")
async def test_rows_by_columns_fill_batches_beyond_max_batch_size() -> None:
    """A task's rows are a backlog already: they go in batches grown as send()'s grow behind
    one in flight (64x max_batch_size, max_request_size at most), not 16 KiB ones."""
    rows = 20_000
    values = [b"%0100d" % i for i in range(rows)]  # 100 B each: ~2.4 MB in all
    batch = pa.RecordBatch.from_pydict({"value": pa.array(values, type=pa.binary())})
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2, replication_factor=1)
            assert await write(fc, [batch]) == rows
            stored = [b for p in range(2) for b in fc.partition(("t", p)).batches]
            got = sorted(v for p in range(2) for _, v, _ in log(fc, "t", p) if v is not None)
    assert got == values
    assert len(stored) <= 6, f"{len(stored)} batches: 16 KiB ones would be ~150"
    assert max(len(b.data) for b in stored) > 16 * 1024 * 16


@pytest.mark.usefixtures("columns_only")
async def test_a_partition_column_keeps_each_partitions_order_and_keys() -> None:
    rows = {
        "key": pa.array([b"k%d" % (i % 7) for i in range(600)], type=pa.binary()),
        "value": pa.array([str(i) for i in range(600)], type=pa.string()),
        "partition": pa.array([i % 2 for i in range(600)], type=pa.int32()),
        "topic": pa.array(["a" if i < 300 else "b" for i in range(600)]),
    }
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("a", partitions=2, replication_factor=1)
            fc.create_topic("b", partitions=2, replication_factor=1)
            assert await write(fc, [pa.RecordBatch.from_pydict(rows)], topic=None) == 600
            got = {(t, p): log(fc, t, p) for t in "ab" for p in range(2)}
    for (topic, partition), records in got.items():
        expected = [
            (b"k%d" % (i % 7), str(i).encode(), 0)
            for i in range(600)
            if i % 2 == partition and (i < 300) == (topic == "a")
        ]
        assert records == expected


@pytest.mark.usefixtures("columns_only")
async def test_keyed_rows_go_where_murmur2_puts_them_in_order() -> None:
    keys = [b"key-%d" % (i % 40) if i % 10 else None for i in range(2000)]
    values = [b"%d" % i for i in range(2000)]
    batch = pa.RecordBatch.from_pydict({"key": pa.array(keys, type=pa.binary()), "value": values})
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=4, replication_factor=1)
            assert await write(fc, [batch]) == 2000
            got = {p: log(fc, "t", p) for p in range(4)}
    for p, records in got.items():
        keyed = [(k, v, 0) for k, v in zip(keys, values, strict=True) if k and partition_for_key(k, 4) == p]
        assert [r for r in records if r[0] is not None] == keyed  # every key's rows, in order
    assert sum(1 for rs in got.values() for r in rs if r[0] is None) == 200


async def test_rows_with_headers_take_the_send_path() -> None:
    headers = pa.array(
        [[{"key": "h", "value": b"x"}] if i % 2 else None for i in range(50)],
        type=pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
    )
    batch = pa.RecordBatch.from_pydict({"value": [b"%d" % i for i in range(50)], "headers": headers})
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=4, replication_factor=1)
            assert await write(fc, [batch]) == 50
            got = [r for p in range(4) for r in log(fc, "t", p)]
    assert sorted(n for _, _, n in got) == [0] * 25 + [1] * 25


async def test_a_row_to_a_missing_partition_fails_the_task_naming_it() -> None:
    batch = pa.RecordBatch.from_pydict({"value": [b"x"], "partition": pa.array([9], type=pa.int32())})
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=2, replication_factor=1)
            with pytest.raises(ValueError, match="topic 't' has no partition 9"):
                await write(fc, [batch])


@pytest.mark.usefixtures("columns_only")
async def test_a_refused_record_in_a_batch_the_producer_splits_fails_the_task() -> None:
    """The broker refuses the whole batch as too large; the producer splits it, the small
    records are written, the big one is refused: the task fails naming its partition (the
    first record of the batch was delivered, so its handle alone would say all is well)."""
    batch = pa.RecordBatch.from_pydict({"value": [b"ok", b"fine", b"x" * 5000]})
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", partitions=1, replication_factor=1, max_message_bytes=1000)
            with pytest.raises(
                writer.DeliveryFailedError, match=r"a record to t-0 was not delivered: .*TooLarge"
            ):
                await write(fc, [batch])
            assert [v for _, v, _ in log(fc, "t", 0)] == [b"ok", b"fine"]
