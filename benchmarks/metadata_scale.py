"""A Metadata answer with a million partitions: memory and event-loop blocking of a client.

A fake broker answers every Metadata request with the same pre-encoded answer, whatever was
asked for. Two layouts:

* ``--layout many-topics`` (the default): the client's topic (``topic-0``) plus
  ``--topics - 1`` others, each of ``--partitions`` partitions; the client skips the others.
* ``--layout one-topic``: ``topic-0`` alone, with ``--partitions`` partitions, which the
  client really uses (the goal: a million of them decoded without blocking the event loop
  for more than 100 ms).

``topic-0``'s partition 0 is real on the fake, so records can be sent: a producer of
``topic-0`` starts, sends and waits for 100 records; a consumer reads them. Measured in a
fresh process: the resident set size before and after (and its peak), the longest
event-loop block (a 10 ms ticker's lateness, a loop-lag probe) and the time to the first
delivery. ``--phases`` also times, in this process and one after the other, the steps a
refresh runs on the answer (decoding, the store's terms, the store's merge, twice: a first
and a repeated answer), each of which holds the event loop if run on it.

    python benchmarks/metadata_scale.py                       # 1000 topics x 1000 partitions
    python benchmarks/metadata_scale.py --topics 100 --partitions 10000
    python benchmarks/metadata_scale.py --layout one-topic --partitions 1000000 --phases
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def build(path: Path, topics: int, partitions: int, version: int) -> None:
    """The answer's body at ``version`` (everything after the response header): ``topics``
    topics of ``partitions`` partitions each."""
    import uuid

    from aiokafka_lead.protocol.messages import MetadataResponse

    part = MetadataResponse.MetadataResponsePartition
    body = MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=0)],
        cluster_id="fake-cluster",
        controller_id=1,
        topics=[
            MetadataResponse.MetadataResponseTopic(
                name=f"topic-{t}",
                topic_id=uuid.UUID(int=t + 1),
                partitions=[
                    part(partition_index=p, leader_id=1, leader_epoch=0, replica_nodes=[1], isr_nodes=[1])
                    for p in range(partitions)
                ],
            )
            for t in range(topics)
        ],
    ).encode(version)
    path.write_bytes(body)


def child(path: Path, version: int) -> None:
    """One measurement; prints a JSON line."""
    import uuid

    import anyio

    from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka_lead.protocol.messages import MetadataResponse
    from aiokafka_lead.testing.fake import FakeCluster, Rewrite
    from tests.support.loop_lag import watch_loop

    body = path.read_bytes()
    flexible = MetadataResponse.is_flexible(version)
    before = rss_mb()

    async def main() -> dict[str, float]:
        async with FakeCluster(brokers=1, max_versions={3: version}) as fc:
            fc.create_topic("topic-0", partitions=1)  # only its partition 0 is real
            fc.topics["topic-0"].topic_id = uuid.UUID(int=1)  # the id the answer gives it
            port = fc.address(1)[1]
            # the broker entry's port (0 in the file) is patched to the fake's, in place
            marker = (0).to_bytes(4, "big")
            real = body.replace(b"127.0.0.1" + marker, b"127.0.0.1" + port.to_bytes(4, "big"), 1)

            def lie(response: object, frame: bytes) -> bytes:
                head = frame[4:8] + (b"\x00" if flexible else b"")
                return (len(head) + len(real)).to_bytes(4, "big") + head + real

            fc.intercept(3, lambda *_: Rewrite(lie), times=None)
            async with watch_loop(hang_s=60) as watch:
                started = time.monotonic()
                async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap, request_timeout_ms=60_000) as p:
                    handles = [await p.send("topic-0", b"v%d" % i, partition=0) for i in range(100)]
                    first = None
                    for h in handles:
                        await h
                        first = first or time.monotonic() - started
                    after_producer = rss_mb()
                consumer = AIOKafkaConsumer(
                    bootstrap_servers=fc.bootstrap, auto_offset_reset="earliest", request_timeout_ms=60_000
                )
                async with consumer:
                    consumer.assign([TopicPartition("topic-0", 0)])
                    got = 0
                    while got < 100:
                        got += sum(len(v) for v in (await consumer.getmany(timeout_ms=1000)).values())
                    after_consumer = rss_mb()
            return {
                "answer_mb": len(body) / 1e6,
                "rss_before_mb": before,
                "rss_after_producer_mb": after_producer,
                "rss_after_consumer_mb": after_consumer,
                "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "longest_loop_block_ms": watch.max_lag_s * 1000,
                "first_delivery_s": first or -1.0,
                "total_s": time.monotonic() - started,
            }

    print(json.dumps(anyio.run(main)))


def phases(path: Path, version: int) -> dict[str, float]:
    """Seconds of each step a refresh runs on the answer, run one after the other without
    pauses (a refresh runs the first and the merges in slices, giving the loop turns)."""
    from aiokafka_lead.core.refresher import snapshot_from_response
    from aiokafka_lead.metadata.decode import iter_decode_metadata
    from aiokafka_lead.metadata.store import MetadataStore
    from aiokafka_lead.protocol.messages import MetadataResponse
    from aiokafka_lead.slices import run_to_end

    # the broker's port (0 in the file) made usable, so the merge sees a led topic
    marker = b"127.0.0.1" + (0).to_bytes(4, "big")
    body = path.read_bytes().replace(marker, b"127.0.0.1" + (9092).to_bytes(4, "big"), 1)
    head = (0).to_bytes(4, "big") + (b"\x00" if MetadataResponse.is_flexible(version) else b"")
    out: dict[str, float] = {}

    def timed(name: str, step: Any) -> Any:
        print(f"  {name} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        result = step()
        out[f"{name}_s"] = time.perf_counter() - started
        return result

    decoded = timed("decode", lambda: run_to_end(iter_decode_metadata(head + body, version, ["topic-0"])))
    snapshot = timed(
        "store_terms",
        lambda: snapshot_from_response(decoded.response, version, {"topic-0"}, topics=decoded.topics),
    )
    store = MetadataStore()
    timed("store_merge_first", lambda: store.apply_metadata(snapshot))
    timed("store_merge_again", lambda: store.apply_metadata(snapshot))
    timed("partitions_for_topic", lambda: store.partitions_for_topic("topic-0"))
    timed("available_partitions", lambda: store.available_partitions("topic-0"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="Measures, for one huge Metadata answer served by the in-process fake cluster: the "
        "longest event-loop block while a producer and a consumer of topic-0 start and work, their "
        "memory, and with --phases the time of each step of a refresh. Prints JSON.",
    )
    parser.add_argument("--layout", choices=("many-topics", "one-topic"), default="many-topics")
    parser.add_argument("--topics", type=int, default=1000, help="many-topics: how many topics")
    parser.add_argument("--partitions", type=int, default=1000, help="partitions per topic")
    parser.add_argument("--version", type=int, default=12, help="the Metadata version answered")
    parser.add_argument("--phases", action="store_true", help="also time each step of a refresh")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.version)
        return
    topics = 1 if args.layout == "one-topic" else args.topics
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "answer.bin"
        t = time.monotonic()
        print(f"building an answer of {topics} x {args.partitions} partitions ...", file=sys.stderr)
        build(path, topics, args.partitions, args.version)
        size_mb = path.stat().st_size / 1e6
        print(f"built a {size_mb:.0f} MB answer in {time.monotonic() - t:.0f} s", file=sys.stderr)
        print("running a producer and a consumer against it (a fresh process) ...", file=sys.stderr)
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(path), "--version", str(args.version)],
            check=True,
            capture_output=True,
            text=True,
        )
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if args.phases:
            print("timing each step of a refresh ...", file=sys.stderr)
            result["phases"] = phases(path, args.version)
    result["layout"] = args.layout
    result["partitions"] = topics * args.partitions
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
