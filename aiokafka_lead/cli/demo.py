"""``aiokafka-lead demo``: the README's main job, the KIP-951 leader-move comparison.

Starts a local 3-node KRaft cluster (or uses ``--bootstrap-server``), then produces at a
fixed rate with acks=all twice, once with KIP-951 leader hints on and once with them off
(the pre-KIP-951 retry path), each time rotating the leadership of every partition three
times. Prints live progress, the comparison table, and writes a plot and the raw samples.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import anyio

from aiokafka_lead.admin import AIOKafkaAdminClient
from aiokafka_lead.bench.leader_move import BenchConfig, run_in_process, table, warm_cluster
from aiokafka_lead.bench.stats import Samples, summarize


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "demo", help="the KIP-951 leader-move demo (starts a local cluster unless told otherwise)"
    )
    p.add_argument("--bootstrap-server", help="use this cluster instead of starting a local one")
    p.add_argument("--command-config", "--admin.config", dest="admin_config")
    p.add_argument("--duration", type=float, default=25.0, help="seconds per run (default 25)")
    p.add_argument("--rate", type=float, default=1000.0, help="records per second (default 1000)")
    p.add_argument("--partitions", type=int, default=12)
    p.add_argument("--cluster-warmup", type=float, default=10.0, help="unmeasured load first (JIT warm-up)")
    p.add_argument("--out", default="demo-results", help="directory for the plot and raw samples")
    p.set_defaults(run=run)


def _say(message: str) -> None:
    print(message, flush=True)


async def demo_on(bootstrap: str, client_kwargs: dict[str, Any], args: argparse.Namespace) -> int:
    cfg = BenchConfig(
        partitions=args.partitions, rate=args.rate, duration_s=args.duration, move_at=(0.2, 0.5, 0.8)
    )
    async with AIOKafkaAdminClient(bootstrap_servers=bootstrap, **client_kwargs) as admin:
        cluster = await admin.describe_cluster()
        _say(f"cluster {cluster.cluster_id}: {len(cluster.brokers)} broker(s)")
        if len(cluster.brokers) < 2:
            _say("leadership cannot move on a single broker: nothing to compare")
            return 1
        await warm_cluster(bootstrap, admin, cfg, args.cluster_warmup, say=_say)
        runs = []
        for label, hints in (("aiokafka_lead hints on", True), ("aiokafka_lead hints off", False)):
            _say(f"\n{label}: {cfg.partitions} partitions, acks=all, {cfg.record_size} B records")
            runs.append(await run_in_process(bootstrap, admin, label, cfg, leader_hints=hints, say=_say))
    summaries = [summarize(r) for r in runs]
    _say("\n" + table(summaries))
    on, off = summaries
    for name, a, b in (("p99.9", on.p999_ms, off.p999_ms), ("max", on.max_ms, off.max_ms)):
        if b and not math.isnan(a) and not math.isnan(b):
            change = (a - b) / b * 100
            _say(f"{name} latency: {a:.0f} ms with hints vs {b:.0f} ms without ({change:+.0f}%)")
    hints = runs[0].extra.get("metrics", {})
    applied, immediate = hints.get("leader_hints_applied"), hints.get("immediate_retries")
    _say(f"with hints: {applied} leader hints applied, {immediate} immediate retries")
    _say(await anyio.to_thread.run_sync(_save, Path(args.out), runs))
    return 0 if all(s.failed == 0 for s in summaries) else 1


def _save(out: Path, runs: list[Samples]) -> str:
    """Write the raw samples and the plot; returns what to tell the user."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "leader_move_demo.json").write_text(json.dumps([r.to_json() for r in runs]))
    try:
        from aiokafka_lead.bench.plot import plot_runs
    except ImportError:
        return f"samples: {out / 'leader_move_demo.json'} (install matplotlib for the plot)"
    path = plot_runs(runs, out / "leader_move_demo.png", "aiokafka_lead: KIP-951 leader hints on vs off")
    return f"samples: {out / 'leader_move_demo.json'}\nplot: {path}"


async def _local_cluster_demo(client_kwargs: dict[str, Any], args: argparse.Namespace) -> int:
    from aiokafka_lead.testing.cluster import KafkaCluster

    with tempfile.TemporaryDirectory(prefix="aiokafka-lead-demo-") as tmp:
        _say("starting a local 3-node Apache Kafka KRaft cluster (official jars from Maven Central)...")
        cluster = KafkaCluster(tmp, brokers=3)
        await anyio.to_thread.run_sync(cluster.up)
        try:
            bootstrap = cluster.bootstrap()
            _say(f"cluster up at {bootstrap}")
            quorum = await anyio.to_thread.run_sync(
                functools.partial(
                    cluster.run_tool,
                    "org.apache.kafka.tools.MetadataQuorumCommand",
                    "--bootstrap-server",
                    bootstrap,
                    "describe",
                    "--status",
                )
            )
            _say("KRaft quorum (Kafka's own MetadataQuorumCommand):")
            for line in quorum.splitlines():
                if line.split(":", 1)[0].strip() in (
                    "LeaderId",
                    "LeaderEpoch",
                    "HighWatermark",
                    "CurrentVoters",
                ):
                    _say(f"  {line.strip()}")
            return await demo_on(bootstrap, client_kwargs, args)
        finally:
            _say("stopping the cluster...")
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(cluster.down)


async def run(args: argparse.Namespace, client_kwargs: dict[str, Any]) -> int:
    if args.bootstrap_server:
        return await demo_on(args.bootstrap_server, client_kwargs, args)
    return await _local_cluster_demo(client_kwargs, args)
