"""CPU time per record of the share consumer's record path, without a network.

Run: ``.venv/bin/python -m benchmarks.share_consumer_cpu [--records N] [--batch B] [--poll P]
[--repeat R] [--explicit]`` (``AIOKAFKA_LEAD_NO_EXTENSIONS=1`` for the pure-Python path).

One round is what the consumer does with one ShareFetch answer of one partition (``--records``
records of 100 bytes in batches of ``--batch``, one acquired range): the fetcher's handling
of the partition (decoding, the records built, gaps), polls of ``--poll`` records until the
buffer is empty (taking them, the ledger's delivery and, implicit mode, the acceptance at
the next poll; ``--explicit`` acknowledges each record instead), then the acknowledgements
taken for the next ShareFetch, its request built and their outcome reported. The request's
encoding, the answer's decoding and the event loop are left out: they cost per request, not
per record.

CPU time (``time.process_time``) of the one process, best of ``--repeat`` rounds: robust on a
busy machine, unlike wall-clock rates.
"""

from __future__ import annotations

import argparse
import gc
import time
import uuid
from types import SimpleNamespace
from typing import Any

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.protocol.messages import ShareFetchResponse
from aiokafka_lead.records import native
from aiokafka_lead.records.builder import RecordBatchBuilder
from aiokafka_lead.share.acknowledge import ShareParts
from aiokafka_lead.share.acks import AckLedger
from aiokafka_lead.share.config import ShareConsumerConfig
from aiokafka_lead.share.fetcher import ShareFetcher
from aiokafka_lead.share.records import AcknowledgeType
from aiokafka_lead.share.session import NodeSessions, ShareSession
from aiokafka_lead.structs import TopicPartition

TP = TopicPartition("cpu", 0)
NODE = 1


def answer(records: int, batch: int) -> ShareFetchResponse.PartitionData:
    data = b""
    for base in range(0, records, batch):
        builder = RecordBatchBuilder(0, 1 << 22, base_offset=base)
        for _ in range(min(batch, records - base)):
            builder.append(0, None, b"x" * 100)
        data += builder.build()
    whole = ShareFetchResponse.AcquiredRecords(first_offset=0, last_offset=records - 1, delivery_count=1)
    acquired = [whole]
    return ShareFetchResponse.PartitionData(
        partition_index=TP.partition, records=data, acquired_records=acquired
    )


def round_cpu(fetcher: ShareFetcher, ledger: AckLedger, part: Any, poll: int, explicit: bool) -> float:
    session = ShareSession(NODE)
    session.epoch = 1
    gc.collect()
    started = time.process_time()
    fetcher._acquire(NODE, TP, part, 0.0)
    buffer = fetcher.buffer
    while len(buffer):
        ledger.before_poll()
        chunks = buffer.take(poll)
        ledger.delivered(chunks)
        if explicit:
            for chunk in chunks:
                for record in chunk:
                    ledger.acknowledge(record, AcknowledgeType.ACCEPT)
    ledger.before_poll()
    acks = ledger.take(NODE)
    session.fetch_request("member", fetcher._parts.config, {TP: uuid.UUID(int=1)}, acks)
    for tp, per in acks.items():
        fetcher.acks.outcome(tp, per, 0, None)
    return time.process_time() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=20_000)
    p.add_argument("--batch", type=int, default=100, help="records per batch")
    p.add_argument("--poll", type=int, default=500, help="max_poll_records")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--explicit", action="store_true", help="acknowledge each record (explicit mode)")
    args = p.parse_args()
    config = ShareConsumerConfig.build({"group_id": "cpu", "max_poll_records": args.poll})
    core = SimpleNamespace(backoff=ExponentialBackoff(100, 1000))
    ledger = AckLedger(explicit=args.explicit)
    parts = ShareParts(core, SimpleNamespace(), ledger, config, NodeSessions(), None)  # type: ignore[arg-type]
    fetcher = ShareFetcher(parts)
    part = answer(args.records, args.batch)
    best = min(round_cpu(fetcher, ledger, part, args.poll, args.explicit) for _ in range(args.repeat))
    c = "C extension" if native.unavailable_reason is None else f"pure Python ({native.unavailable_reason})"
    mode = "explicit" if args.explicit else "implicit"
    print(
        f"{best / args.records * 1e6:.3f} us CPU per record ({mode}, {args.records} records, batches of "
        f"{args.batch}, polls of {args.poll}, best of {args.repeat}; {c})"
    )


if __name__ == "__main__":
    main()
