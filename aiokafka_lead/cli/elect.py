"""``aiokafka-lead elect-leaders``: Kafka's LeaderElectionCommand (KIP-183, KIP-460)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aiokafka_lead.admin import AdminClient, ElectionResult
from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.structs import TopicPartition

DESCRIPTION = """\
Elect a leader for the given partitions.

The PREFERRED replica of a partition is the first broker in its replica list. After
broker restarts or failures, leadership drifts to other replicas and load concentrates on
a few brokers; a preferred election moves each partition's leadership back to its first
replica. An UNCLEAN election (KIP-460) elects any live replica, even one out of sync:
it restores availability for a partition with no in-sync replica left, at the risk of
losing acknowledged records.

You do not need this command when the brokers run with
auto.leader.rebalance.enable=true (the default): the controller then runs preferred
elections itself, periodically.

Exactly one of --topic/--partition, --all-topic-partitions or --path-to-json-file selects
the partitions. The JSON file has Kafka's format:
  {"partitions": [{"topic": "foo", "partition": 1}, {"topic": "bar", "partition": 0}]}
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "elect-leaders",
        help="elect preferred or unclean leaders (KIP-183/KIP-460)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--bootstrap-server", required=True, help="HOST:PORT[,HOST:PORT...] of the cluster")
    p.add_argument("--admin.config", dest="admin_config", help="Java-style client properties file")
    p.add_argument(
        "--election-type",
        required=True,
        type=str.upper,
        choices=["PREFERRED", "UNCLEAN"],
        help="PREFERRED: the first replica; UNCLEAN: any live replica, possibly out of sync",
    )
    p.add_argument("--topic", help="topic of the partition to elect for (needs --partition)")
    p.add_argument("--partition", type=int, help="partition id (needs --topic)")
    p.add_argument("--all-topic-partitions", action="store_true", help="elect for every partition")
    p.add_argument("--path-to-json-file", help="JSON file listing the partitions")
    p.set_defaults(run=run)


def select_partitions(args: argparse.Namespace) -> list[TopicPartition] | None:
    """The partitions the options name (None = all); conflicting options raise ValueError."""
    chosen = [
        name
        for name, given in (
            ("--topic", args.topic is not None),
            ("--all-topic-partitions", args.all_topic_partitions),
            ("--path-to-json-file", args.path_to_json_file is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise ValueError(
            "exactly one of --topic, --all-topic-partitions or --path-to-json-file is required"
            + (f" (got {' and '.join(chosen)})" if chosen else "")
        )
    if args.partition is not None and args.topic is None:
        raise ValueError("--partition needs --topic")
    if args.topic is not None:
        if args.partition is None:
            raise ValueError("--topic needs --partition")
        return [TopicPartition(args.topic, args.partition)]
    if args.all_topic_partitions:
        return None
    return partitions_from_json(Path(args.path_to_json_file))


def partitions_from_json(path: Path) -> list[TopicPartition]:
    try:
        data = json.loads(path.read_text())
        items = data["partitions"]
        tps = [TopicPartition(str(i["topic"]), int(i["partition"])) for i in items]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f'{path}: expected {{"partitions": [{{"topic": ..., "partition": ...}}]}}: {exc}'
        ) from exc
    if len(set(tps)) != len(tps):
        raise ValueError(f"{path}: duplicate partitions")
    if not tps:
        raise ValueError(f"{path}: no partitions listed")
    return tps


def describe(result: ElectionResult, election: str) -> str:
    name = f"{result.tp.topic}-{result.tp.partition}"
    if result.error_code == ErrorCode.NONE:
        return f"{name}: elected {election.lower()} leader"
    if result.error_code == ErrorCode.ELECTION_NOT_NEEDED:
        return f"{name}: valid replica already elected (election not needed)"
    return f"{name}: FAILED ({result.error_message or f'error code {result.error_code}'})"


async def run(args: argparse.Namespace, client_kwargs: dict[str, Any]) -> int:
    partitions = select_partitions(args)
    async with AdminClient(bootstrap_servers=args.bootstrap_server, **client_kwargs) as admin:
        results = await admin.elect_leaders(args.election_type, partitions)
    if partitions is not None:  # partitions the broker left out of its answer
        for tp in partitions:
            results.setdefault(tp, ElectionResult(tp, 3, "unknown topic or partition"))
    if not results:
        print("no partition needed an election")
    for tp in sorted(results):
        print(describe(results[tp], args.election_type))
    return 0 if all(r.ok for r in results.values()) else 1
