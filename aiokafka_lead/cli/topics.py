"""``aiokafka-lead topics create|list|describe|delete``."""

from __future__ import annotations

import argparse
from typing import Any

from aiokafka_lead.admin import AdminClient, NewTopic


def add_parser(sub: Any) -> None:
    p = sub.add_parser("topics", help="create, list, describe or delete topics")
    actions = p.add_subparsers(dest="action", required=True)
    create = _action(actions, "create", "create a topic")
    create.add_argument("--topic", required=True)
    create.add_argument("--partitions", type=int, default=-1, help="default: the broker's num.partitions")
    create.add_argument("--replication-factor", type=int, default=-1)
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    _action(actions, "list", "list topics")
    describe = _action(actions, "describe", "describe topics (all when no --topic)")
    describe.add_argument("--topic", action="append", help="repeat for several topics")
    _action(actions, "delete", "delete a topic").add_argument("--topic", required=True)
    p.set_defaults(run=run)


def _action(actions: Any, name: str, helptext: str) -> argparse.ArgumentParser:
    """A ``topics`` action with the options every action takes: the cluster to ask."""
    a: argparse.ArgumentParser = actions.add_parser(name, help=helptext)
    a.add_argument("--bootstrap-server", required=True)
    a.add_argument("--command-config", "--admin.config", dest="admin_config", help="client properties file")
    return a


def _configs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--config expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


async def run(args: argparse.Namespace, client_kwargs: dict[str, Any]) -> int:
    async with AdminClient(bootstrap_servers=args.bootstrap_server, **client_kwargs) as admin:
        if args.action == "create":
            topic = NewTopic(
                args.topic,
                args.partitions,
                args.replication_factor,
                topic_configs=_configs(args.config),
            )
            await admin.create_topics([topic])
            print(f"Created topic {args.topic}.")
        elif args.action == "list":
            for name in await admin.list_topics():
                print(name)
        elif args.action == "describe":
            for t in await admin.describe_topics(args.topic):
                print(f"Topic: {t.name}\tTopicId: {t.topic_id}\tPartitionCount: {len(t.partitions)}")
                for p in t.partitions:
                    print(
                        f"\tTopic: {t.name}\tPartition: {p.partition}\tLeader: {p.leader}\t"
                        f"LeaderEpoch: {p.leader_epoch}\tReplicas: {','.join(map(str, p.replicas))}\t"
                        f"Isr: {','.join(map(str, p.isr))}"
                    )
        else:
            await admin.delete_topics([args.topic])
            print(f"Deleted topic {args.topic}.")
    return 0
