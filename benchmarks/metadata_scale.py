"""A Metadata answer with a million partitions: memory and event-loop blocking of a client.

A fake broker answers every Metadata request with the same pre-encoded answer: the
client's topic (``topic-0``, real on the fake, so records can be sent) plus
``--topics - 1`` others of ``--partitions`` partitions each, whatever was asked for. A
producer of ``topic-0`` starts, sends and waits for 100 records; a consumer reads them.
Measured in a fresh process: the resident set size before and after (and its peak), the
longest event-loop block (a 10 ms ticker's lateness) and the time to the first delivery.

    python benchmarks/metadata_scale.py                       # 1000 topics x 1000 partitions
    python benchmarks/metadata_scale.py --topics 100 --partitions 10000
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def build(path: Path, topics: int, partitions: int, version: int) -> None:
    """The answer's body at ``version`` (everything after the response header)."""
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--version", type=int, default=12)
    parser.add_argument("--child", type=Path)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.version)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "answer.bin"
        t = time.monotonic()
        build(path, args.topics, args.partitions, args.version)
        size_mb = path.stat().st_size / 1e6
        print(f"built a {size_mb:.0f} MB answer in {time.monotonic() - t:.0f} s", file=sys.stderr)
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(path), "--version", str(args.version)],
            check=True,
            capture_output=True,
            text=True,
        )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["partitions"] = args.topics * args.partitions
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
