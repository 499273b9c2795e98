"""``aiokafka-lead reassign --execute|--verify``: Kafka's reassignment JSON (KIP-455)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.structs import TopicPartition


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "reassign",
        help="move partition replicas (Kafka's reassignment JSON)",
        description='Reassignment JSON: {"version": 1, "partitions": '
        '[{"topic": "foo", "partition": 0, "replicas": [2, 1, 3]}]}. '
        "The first replica becomes the preferred leader.",
    )
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--command-config", "--admin.config", dest="admin_config")
    p.add_argument("--reassignment-json-file", required=True)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--execute", action="store_true", help="start the reassignment")
    mode.add_argument("--verify", action="store_true", help="report whether it has completed")
    p.set_defaults(run=run)


def load_reassignment(path: Path) -> dict[TopicPartition, list[int]]:
    try:
        data = json.loads(path.read_text())
        plan = {
            TopicPartition(str(i["topic"]), int(i["partition"])): [int(r) for r in i["replicas"]]
            for i in data["partitions"]
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a reassignment JSON file: {exc}") from exc
    if not plan:
        raise ValueError(f"{path}: no partitions listed")
    for tp, replicas in plan.items():
        if not replicas or len(set(replicas)) != len(replicas):
            raise ValueError(f"{path}: {tp.topic}-{tp.partition} needs distinct replicas")
    return plan


async def run(args: argparse.Namespace, client_kwargs: dict[str, Any]) -> int:
    plan = load_reassignment(Path(args.reassignment_json_file))
    async with AdminClient(bootstrap_servers=args.bootstrap_server, **client_kwargs) as admin:
        if args.execute:
            await admin.alter_partition_reassignments(plan)
            print(f"Started reassignment of {len(plan)} partition(s).")
            return 0
        ongoing = await admin.list_partition_reassignments(list(plan))
        topics = sorted({tp.topic for tp in plan})
        current = {
            (t.name, p.partition): list(p.replicas)
            for t in await admin.describe_topics(topics)
            for p in t.partitions
        }
    failed = 0
    for tp, replicas in sorted(plan.items()):
        name = f"{tp.topic}-{tp.partition}"
        if tp in ongoing:
            print(f"Reassignment of partition {name} is still in progress.")
            failed += 1
        elif current.get((tp.topic, tp.partition)) == replicas:
            print(f"Reassignment of partition {name} is completed.")
        else:
            now = current.get((tp.topic, tp.partition))
            print(f"Reassignment of partition {name} is not in effect: replicas are {now}.")
            failed += 1
    return 0 if failed == 0 else 1
