"""Copy one topic to another exactly once (consume-transform-produce with transactions).

    python examples/transactional_copy.py --bootstrap localhost:9092 \\
        --source orders --dest orders-upper --group copier --transactional-id copier-1

The pattern:

* A read_committed consumer in a group reads a batch; the transformed records and the
  consumed offsets go into ONE transaction (``send_offsets_to_transaction`` with the
  consumer's ``group_metadata()``, KIP-447). Either both become visible or neither does.
* Record ``i`` of input partition ``p`` goes to output partition ``p``, so the output keeps
  the input's order per partition (both topics need the same partition count).
* A transaction that fails with an abortable error (a rebalance fenced our offsets, a
  record that could not be delivered) is aborted; the consumer rewinds to its committed
  offsets and the batch is copied again. A fatal error (another copier started with the
  same transactional id) ends the program.
* SIGTERM / SIGINT: the transaction in progress completes (commit), then the program
  stops; nothing is copied twice and nothing is lost when it is started again.

Progress goes to stderr once a second.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from collections.abc import Callable

import anyio

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.errors import KafkaError, ProducerFencedError
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger("transactional_copy")


def upper(value: bytes | None) -> bytes | None:
    """The transformation; replace with yours."""
    return value.upper() if value is not None else None


class Copier:
    def __init__(
        self,
        consumer: AIOKafkaConsumer[bytes, bytes],
        producer: AIOKafkaProducer,
        dest: str,
        transform: Callable[[bytes | None], bytes | None],
        max_records: int,
    ) -> None:
        self.consumer = consumer
        self.producer = producer
        self.dest = dest
        self.transform = transform
        self.max_records = max_records
        self.copied = 0
        self.transactions = 0
        self.aborts = 0
        self.stop = anyio.Event()

    async def copy_one_batch(self) -> None:
        batch = await self.consumer.getmany(timeout_ms=500, max_records=self.max_records)
        if not batch:
            return
        # the membership these records were fetched under: if a rebalance gave their partitions
        # to another copier meanwhile, the coordinator rejects the offsets and we abort (KIP-447)
        group = self.consumer.group_metadata()
        if group.generation_id < 0:
            await self.rewind()  # not a member right now: these records are not ours to commit
            return
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        count = 0
        try:
            async with self.producer.transaction():
                for tp, records in batch.items():
                    for record in records:
                        await self.producer.send(
                            self.dest, self.transform(record.value), key=record.key, partition=tp.partition
                        )
                    offsets[tp] = OffsetAndMetadata(records[-1].offset + 1, "")
                    count += len(records)
                await self.producer.send_offsets_to_transaction(offsets, group)
        except ProducerFencedError:
            raise
        except KafkaError as exc:
            # aborted (by the context manager): copy the same records again
            self.aborts += 1
            log.warning("transaction aborted (%r); rewinding to the committed offsets", exc)
            await self.rewind()
            return
        self.copied += count
        self.transactions += 1

    async def rewind(self) -> None:
        while True:
            try:
                assigned = self.consumer.assignment()
                if assigned:
                    committed = await self.consumer.seek_to_committed(*assigned)
                    never = [tp for tp, offset in committed.items() if offset is None]
                    if never:  # nothing committed yet: from the start, as auto_offset_reset
                        await self.consumer.seek_to_beginning(*never)
                return
            except KafkaError as exc:
                log.warning("rewind failed (%r); retrying", exc)
                await anyio.sleep(0.5)

    async def progress(self) -> None:
        started = time.monotonic()
        while True:
            await anyio.sleep(1)
            rate = self.copied / max(time.monotonic() - started, 1e-9)
            print(
                f"copied {self.copied} records in {self.transactions} transactions "
                f"({self.aborts} aborted), {rate:.0f} records/s",
                file=sys.stderr,
                flush=True,
            )


async def watch_signals(copier: Copier) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("signal %d: finishing the current transaction, then stopping", signum)
            copier.stop.set()
            return


async def run(args: argparse.Namespace) -> None:
    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        args.source,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    )
    producer = AIOKafkaProducer(
        bootstrap_servers=args.bootstrap,
        transactional_id=args.transactional_id,
        linger_ms=args.linger_ms,
    )
    async with consumer, producer:
        copier = Copier(consumer, producer, args.dest, upper, args.max_records)
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_signals, copier)
            tg.start_soon(copier.progress)
            try:
                while not copier.stop.is_set():
                    await copier.copy_one_batch()
            finally:
                tg.cancel_scope.cancel()
    print(
        f"stopped: copied {copier.copied} records in {copier.transactions} transactions "
        f"({copier.aborts} aborted)",
        file=sys.stderr,
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--dest", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--max-records", type=int, default=2000, help="records per transaction (at most)")
    parser.add_argument("--linger-ms", type=int, default=5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    code = 0
    try:
        anyio.run(run, args)
    except* ProducerFencedError as group:
        print(f"fenced: another copier uses this transactional id ({group.exceptions[0]})", file=sys.stderr)
        code = 2
    return code


if __name__ == "__main__":
    sys.exit(main())
