"""Command line for the test cluster; other scripts rely on its output contract.

``up`` and ``status`` print ``bootstrap=HOST:PORT,...`` as the last stdout line; all
progress goes to stderr. Exit status is 0 on success, 1 on failure, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from . import config, jars
from .cluster import STATE_FILE, KafkaCluster
from .node import ClusterError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m aiokafka_lead.testing.cluster",
        description="Start and disturb a local Apache Kafka KRaft cluster for tests.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    prov = sub.add_parser("provision", help="download and cache the Kafka jars only")
    which = prov.add_mutually_exclusive_group()
    which.add_argument("--kafka-version", default=jars.DEFAULT_KAFKA_VERSION)
    which.add_argument(
        "--tested",
        action="store_true",
        help=f"every version the test suite runs against ({', '.join(jars.TESTED_KAFKA_VERSIONS)})",
    )

    up = sub.add_parser("up", help="start a detached cluster")
    up.add_argument("--dir", required=True)
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--kafka-version", default=jars.DEFAULT_KAFKA_VERSION)
    up.add_argument(
        "--listeners",
        default="PLAINTEXT",
        help="comma-separated client listeners: PLAINTEXT,SSL,SASL_PLAINTEXT,SASL_SSL",
    )
    up.add_argument("--benchmark", action="store_true", help="bigger JVM, G1 GC")
    up.add_argument(
        "--broker-profile",
        default=config.DEFAULT_PROFILE,
        choices=sorted(config.PROFILES),
        help=f"broker settings on top of Kafka's defaults (default {config.DEFAULT_PROFILE})",
    )
    up.add_argument("--timeout", type=float, default=120.0)

    for name, text in (
        ("status", "exit 0 when every node is up"),
        ("down", "stop every node this tool started"),
    ):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("--dir", required=True)

    for name, text in (
        ("stop", "graceful stop (SIGTERM, controlled shutdown)"),
        ("kill", "crash a node (SIGKILL)"),
        ("start", "start a stopped node"),
        ("restart", "graceful restart, optionally on new client ports"),
    ):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("--dir", required=True)
        sp.add_argument("--node", type=int, required=True)
        if name == "restart":
            sp.add_argument("--new-port", action="store_true")

    tool = sub.add_parser("tool", help="run a Kafka tool main class with the cluster's jars")
    tool.add_argument("--dir", required=True)
    tool.add_argument("main_class")
    tool.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _print_bootstrap(cluster: KafkaCluster) -> None:
    """Every listener first, then the contract line (first listener) last."""
    for name in cluster.listeners[1:]:
        print(f"bootstrap.{name}={cluster.bootstrap(name)}")
    if cluster.ca_file is not None:
        print(f"ca_file={cluster.ca_file}")
    print(f"bootstrap={cluster.bootstrap(cluster.listeners[0])}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    cmd = args.command
    if cmd == "provision":
        for version in jars.TESTED_KAFKA_VERSIONS if args.tested else (args.kafka_version,):
            jars.provision(version)
        return 0
    if cmd == "up":
        started = time.monotonic()
        cluster = KafkaCluster(
            args.dir,
            args.brokers,
            kafka_version=args.kafka_version,
            listeners=[s for s in args.listeners.split(",") if s],
            benchmark=args.benchmark,
            profile=args.broker_profile,
        )
        cluster.up(timeout=args.timeout)
        jars.progress("up", started)
        changed = cluster.non_default_settings()
        jars.progress(
            f"broker profile {args.broker_profile}: "
            + (", ".join(f"{k}={v}" for k, v in changed.items()) or "Kafka's defaults")
        )
        _print_bootstrap(cluster)
        return 0

    if cmd == "down" and not (Path(args.dir) / STATE_FILE).exists():
        print(f"no cluster state in {args.dir}: nothing to stop", file=sys.stderr)
        return 0
    cluster = KafkaCluster.attach(args.dir)
    if cmd == "status":
        for s in cluster.status():
            state = f"running pid {s.pid}" if s.running else "down"
            ports = ", ".join(f"{k}:{v}" for k, v in s.ports.client.items())
            print(f"node {s.node_id}: {state} ({ports})", file=sys.stderr)
        up = cluster.is_up()
        print("cluster is up" if up else "cluster is NOT fully up", file=sys.stderr)
        if up:
            _print_bootstrap(cluster)
        return 0 if up else 1
    if cmd == "down":
        cluster.down()
        return 0
    if cmd == "tool":
        sys.stdout.write(cluster.run_tool(args.main_class, *args.args))
        return 0
    if cmd == "stop":
        cluster.stop_node(args.node)
    elif cmd == "kill":
        cluster.kill_node(args.node)
    elif cmd == "start":
        cluster.start_node(args.node)
        _print_bootstrap(cluster)
    elif cmd == "restart":
        cluster.restart_node(args.node, new_port=args.new_port)
        _print_bootstrap(cluster)
    return 0


if __name__ == "__main__":
    sys.exit(main())
