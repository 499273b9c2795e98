"""A consumer-group worker: process each record, commit after processing, stop cleanly.

    python examples/consumer_worker.py --bootstrap localhost:9092 --group workers --topic orders

The pattern:

* ``async for`` over a group subscription; several copies of this script share the
  topic's partitions (start more to scale out, stop some to scale in).
* Each record is processed inside a shielded scope, so a shutdown never interrupts a
  record half-way; its offset is committed only after it was processed (at-least-once).
  Commits are batched: every ``--commit-every`` records or second, and always at the end.
* SIGTERM / SIGINT cancel the wait for the next record only; the worker then commits what
  it processed and leaves the group (``async with`` exit), so the remaining workers take
  over its partitions at once instead of after the session timeout.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time

import anyio

from aiokafka_lead import AIOKafkaConsumer, CommitFailedError, ConsumerRebalanceListener
from aiokafka_lead.structs import ConsumerRecord, OffsetAndMetadata, TopicPartition

log = logging.getLogger("consumer_worker")


async def process(record: ConsumerRecord[bytes, bytes]) -> None:
    """Your work goes here; this one prints a line per record."""
    print(f"processed {record.topic}-{record.partition}@{record.offset}", flush=True)


class CommitOnRevoke(ConsumerRebalanceListener):
    """Before partitions move to another worker, commit what was processed on them."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self.worker.commit(only=revoked)


class Worker:
    def __init__(self, consumer: AIOKafkaConsumer[bytes, bytes], commit_every: int) -> None:
        self.consumer = consumer
        self.commit_every = commit_every
        self.pending: dict[TopicPartition, OffsetAndMetadata] = {}
        self.last_commit = time.monotonic()

    async def commit(self, only: set[TopicPartition] | None = None) -> None:
        offsets = {tp: om for tp, om in self.pending.items() if only is None or tp in only}
        if not offsets:
            return
        try:
            await self.consumer.commit(offsets)
        except CommitFailedError as exc:
            # the group rebalanced first: these records will be processed again elsewhere
            log.warning("commit failed: %s", exc)
        for tp in offsets:
            self.pending.pop(tp, None)
        self.last_commit = time.monotonic()

    async def run(self) -> None:
        try:
            async for record in self.consumer:
                with anyio.CancelScope(shield=True):  # never stop half-way through a record
                    await process(record)
                    tp = TopicPartition(record.topic, record.partition)
                    self.pending[tp] = OffsetAndMetadata(record.offset + 1, "", record.leader_epoch)
                    if len(self.pending) >= self.commit_every or time.monotonic() - self.last_commit > 1:
                        await self.commit()
        finally:
            with anyio.CancelScope(shield=True):
                await self.commit()


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default="localhost:9092")
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", action="append", required=True)
    parser.add_argument("--commit-every", type=int, default=100)
    args = parser.parse_args(argv)

    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        enable_auto_commit=False,  # commit after processing, not after fetching
        auto_offset_reset="earliest",
    )
    worker = Worker(consumer, args.commit_every)
    async with consumer:  # leaving the block leaves the group
        consumer.subscribe(args.topic, listener=CommitOnRevoke(worker))
        async with anyio.create_task_group() as tg:

            async def stop_on_signal() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for signum in signals:
                        log.info("%s: committing and leaving the group", signal.Signals(signum).name)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(stop_on_signal)
            await worker.run()
            tg.cancel_scope.cancel()
    print("worker stopped", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    anyio.run(main)
