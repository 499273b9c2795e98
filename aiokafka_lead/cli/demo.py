"""``aiokafka-lead demo``: the README's main job, the KIP-951 leader-move comparison.

Starts a local 3-node KRaft cluster for a named scenario (by default ``kip-conditions``:
broker defaults, clients behind an emulated real network; loopback when Go is missing) or
uses ``--bootstrap-server``, then produces at a fixed rate with acks=all in short rounds,
alternating KIP-951 leader hints on and off (the pre-KIP-951 retry path) in ABBA order,
each round rotating the leadership of every partition three times. Prints the conditions,
live progress, every round and the comparison (median and spread per mode, the per-pair
ratio, and whether the difference is outside the noise; latency from each record's
scheduled time), and writes the raw samples as JSON and, with matplotlib installed, a plot.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path
from typing import Any

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.bench.leader_move import BenchConfig, run_in_process, table, warm_cluster
from aiokafka_lead.bench.plot import NO_PLOT, can_plot, plot_runs
from aiokafka_lead.bench.rounds import abba_order, compare
from aiokafka_lead.bench.scenarios import SCENARIOS, cluster_for
from aiokafka_lead.bench.stats import Samples, summarize


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "demo", help="the KIP-951 leader-move demo (starts a local cluster unless told otherwise)"
    )
    p.add_argument("--bootstrap-server", help="use this cluster instead of starting a local one")
    p.add_argument("--command-config", "--admin.config", dest="admin_config")
    p.add_argument(
        "--scenario",
        default="kip-conditions",
        choices=sorted(SCENARIOS),
        help="conditions of the local cluster (default kip-conditions; see docs/kip-951.md)",
    )
    p.add_argument(
        "--offsets-topic",
        action="store_true",
        help="create __consumer_offsets first, as on a used cluster: its idle partitions make every "
        "move wait for the followers' parked fetches (docs/kip-951.md)",
    )
    p.add_argument("--duration", type=float, default=12.0, help="seconds per round (default 12)")
    p.add_argument(
        "--rounds",
        type=_positive,
        default=3,
        help="rounds per mode, alternating hints on and off (default 3)",
    )
    p.add_argument("--rate", type=float, default=1000.0, help="records per second (default 1000)")
    p.add_argument("--partitions", type=int, default=12)
    p.add_argument("--cluster-warmup", type=float, default=10.0, help="unmeasured load first (JIT warm-up)")
    p.add_argument("--out", default="demo-results", help="directory for the plot and raw samples")
    p.set_defaults(run=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _say(message: str) -> None:
    print(message, flush=True)


async def demo_on(
    bootstrap: str,
    client_kwargs: dict[str, Any],
    args: argparse.Namespace,
    conditions: list[str],
    *,
    control_bootstrap: str | None = None,
) -> int:
    cfg = BenchConfig(
        partitions=args.partitions, rate=args.rate, duration_s=args.duration, move_at=(0.2, 0.5, 0.8)
    )
    async with AdminClient(bootstrap_servers=control_bootstrap or bootstrap, **client_kwargs) as admin:
        cluster = await admin.describe_cluster()
        _say(f"cluster {cluster.cluster_id}: {len(cluster.brokers)} broker(s)")
        if len(cluster.brokers) < 2:
            _say("leadership cannot move on a single broker: nothing to compare")
            return 1
        await warm_cluster(bootstrap, admin, cfg, args.cluster_warmup, say=_say)
        runs: dict[bool, list[Samples]] = {True: [], False: []}
        order = abba_order(args.rounds, ("on", "off"))
        for i, mode in enumerate(order, 1):
            hints = mode == "on"
            label = f"hints {mode} #{len(runs[hints]) + 1}"
            _say(f"\nround {i}/{len(order)}: {label}, {cfg.partitions} partitions, {cfg.record_size} B")
            runs[hints].append(
                await run_in_process(bootstrap, admin, label, cfg, leader_hints=hints, say=_say)
            )
    on, off = ([summarize(r) for r in runs[h]] for h in (True, False))
    _say("")
    for line in conditions:
        _say(line)
    _say(
        f"load: {cfg.rate:.0f} records/s of {cfg.record_size} B, acks=all, linger 0, "
        f"{cfg.partitions} partitions, every leader moved at "
        + ", ".join(f"{m * 100:.0f}%" for m in cfg.move_at)
        + f" of each {cfg.duration_s:.0f}s round; latency from each record's scheduled time; "
        f"{args.rounds} rounds per mode in the order {', '.join(order)}"
    )
    _say(table([s for pair in zip(on, off, strict=True) for s in pair]))
    for metric, attr in (("p99.9 latency", "p999_ms"), ("max latency", "max_ms")):
        a = [getattr(s, attr) for s in on]
        b = [getattr(s, attr) for s in off]
        if all(not math.isnan(v) for v in a + b):
            _say(compare(a, b).verdict("hints on", "hints off", metric))
    metrics = [r.extra.get("metrics", {}) for r in runs[True]]
    applied = sum(m.get("leader_hints_applied", 0) for m in metrics)
    immediate = sum(m.get("immediate_retries", 0) for m in metrics)
    _say(f"with hints: {applied} leader hints applied, {immediate} immediate retries (all rounds)")
    all_runs = [r for pair in zip(runs[True], runs[False], strict=True) for r in pair]
    for line in save(Path(args.out), all_runs, conditions):
        _say(line)
    return 0 if all(s.failed == 0 for s in on + off) else 1


def save(out: Path, runs: list[Samples], conditions: list[str]) -> list[str]:
    """Write the raw samples and, with matplotlib, the plot; returns what to tell the user."""
    out.mkdir(parents=True, exist_ok=True)
    samples = out / "leader_move_demo.json"
    samples.write_text(json.dumps({"conditions": conditions, "runs": [r.to_json() for r in runs]}))
    if not can_plot():
        return [f"samples: {samples}", NO_PLOT]
    title = "aiokafka_lead: KIP-951 leader hints on vs off\n" + conditions[0]
    path = plot_runs(runs, out / "leader_move_demo.png", title)
    return [f"samples: {samples}", f"plot: {path}"]


async def run(args: argparse.Namespace, client_kwargs: dict[str, Any]) -> int:
    if args.bootstrap_server:
        conditions = [
            f"cluster: {args.bootstrap_server} (external: its broker settings and network are its own)"
        ]
        return await demo_on(args.bootstrap_server, client_kwargs, args, conditions)
    with tempfile.TemporaryDirectory(prefix="aiokafka-lead-demo-") as tmp:
        async with cluster_for(
            SCENARIOS[args.scenario], Path(tmp), rate=args.rate, record_size=1024,
            offsets_topic=args.offsets_topic, say=_say,
        ) as env:  # fmt: skip
            conditions = env.describe()
            for line in conditions:
                _say(line)
            return await demo_on(
                env.bootstrap, client_kwargs, args, conditions, control_bootstrap=env.control_bootstrap
            )
