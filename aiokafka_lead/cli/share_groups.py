"""``aiokafka-lead share-groups``: Kafka's ``kafka-share-groups.sh`` flags where they apply.

    --list
    --describe --group G [--members | --offsets]     (default: --offsets)
    --reset-offsets --group G --topic T (--to-earliest | --to-latest | --to-offset N) [--execute]
    --delete-offsets --group G --topic T
    --delete --group G

As Kafka's tool, ``--reset-offsets`` without ``--execute`` only prints the plan.
"""

from __future__ import annotations

import argparse
from typing import Any

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.admin.types import OffsetSpec
from aiokafka_lead.structs import TopicPartition

ACTIONS = ("list", "describe", "reset_offsets", "delete_offsets", "delete")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("share-groups", help="list, describe, reset or delete share groups")
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--command-config", "--admin.config", dest="admin_config", help="client properties file")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list the share groups")
    action.add_argument("--describe", action="store_true", help="describe --group")
    action.add_argument("--reset-offsets", action="store_true", help="move --group's start offsets")
    action.add_argument("--delete-offsets", action="store_true", help="forget --group's state for --topic")
    action.add_argument("--delete", action="store_true", help="delete --group (it must be empty)")
    p.add_argument("--group", action="append", default=[], help="repeat for several groups")
    p.add_argument("--topic", action="append", default=[], help="repeat for several topics")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--members", action="store_true", help="with --describe: the members")
    what.add_argument("--offsets", action="store_true", help="with --describe: start offsets and lag")
    to = p.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int)
    p.add_argument("--execute", action="store_true", help="with --reset-offsets: do it (default: print)")
    p.set_defaults(run=run)


async def run(args: argparse.Namespace, client_kwargs: dict[str, Any]) -> int:
    if not args.list and not args.group:
        raise ValueError("--group is required for this action")
    if (args.reset_offsets or args.delete_offsets) and not args.topic:
        raise ValueError("--topic is required with --reset-offsets and --delete-offsets")
    if args.reset_offsets and not (args.to_earliest or args.to_latest or args.to_offset is not None):
        raise ValueError("--reset-offsets needs --to-earliest, --to-latest or --to-offset")
    async with AdminClient(bootstrap_servers=args.bootstrap_server, **client_kwargs) as admin:
        if args.list:
            for listing in await admin.list_share_groups():
                print(listing.group_id)
        elif args.describe:
            await _describe(admin, args)
        elif args.reset_offsets:
            await _reset(admin, args)
        elif args.delete_offsets:
            for group in args.group:
                await admin.delete_share_group_offsets(group, args.topic)
                print(f"Deleted the offsets of topic(s) {', '.join(args.topic)} in share group {group!r}.")
        else:
            await admin.delete_share_groups(args.group)
            for group in args.group:
                print(f"Deleted share group {group!r}.")
    return 0


async def _describe(admin: AdminClient, args: argparse.Namespace) -> None:
    groups = await admin.describe_share_groups(args.group)
    if args.members:
        print(f"{'GROUP':<24} {'CONSUMER-ID':<24} {'HOST':<18} {'CLIENT-ID':<24} {'EPOCH':>5}  ASSIGNMENT")
        for g in groups:
            for m in g.members:
                parts = ",".join(f"{tp.topic}:{tp.partition}" for tp in sorted(m.assignment))
                who = f"{m.member_id:<24} {m.client_host:<18} {m.client_id:<24}"
                print(f"{g.group_id:<24} {who} {m.member_epoch:>5}  {parts}")
        return
    print(f"{'GROUP':<24} {'TOPIC':<24} {'PARTITION':>9} {'START-OFFSET':>12} {'LAG':>8}")
    for g in groups:
        offsets = await admin.list_share_group_offsets(g.group_id)
        for tp, o in offsets.items():
            lag = "-" if o.lag < 0 else str(o.lag)
            start = "-" if o.start_offset < 0 else str(o.start_offset)
            print(f"{g.group_id:<24} {tp.topic:<24} {tp.partition:>9} {start:>12} {lag:>8}")


async def _reset(admin: AdminClient, args: argparse.Namespace) -> None:
    descriptions = await admin.describe_topics(args.topic)
    partitions = [TopicPartition(d.name, p.partition) for d in descriptions for p in d.partitions]
    if args.to_offset is not None:
        targets = dict.fromkeys(partitions, args.to_offset)
    else:
        spec = OffsetSpec.EARLIEST if args.to_earliest else OffsetSpec.LATEST
        found = await admin.list_offsets(dict.fromkeys(partitions, spec))
        targets = {tp: info.offset for tp, info in found.items()}
    for group in args.group:
        print(f"{'GROUP':<24} {'TOPIC':<24} {'PARTITION':>9} {'NEW-START-OFFSET':>16}")
        for tp, offset in sorted(targets.items()):
            print(f"{group:<24} {tp.topic:<24} {tp.partition:>9} {offset:>16}")
        if args.execute:
            await admin.alter_share_group_offsets(group, targets)
    if not args.execute:
        print("Dry run: nothing changed (add --execute).")
