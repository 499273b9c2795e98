"""Moving partition leadership on purpose, the way tests, benchmarks and the demo do it.

Rotate each partition's replica list by one (KIP-455 reassignment: the order changes, the
replica set does not), then run preferred elections (KIP-460) until every partition is led
by its new first replica. Moves are observable: each bumps the leader epoch.
"""

from __future__ import annotations

from collections.abc import Iterable

import anyio

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.structs import TopicPartition


async def current_leaders(
    admin: AdminClient, topics: Iterable[str]
) -> dict[TopicPartition, tuple[int, int]]:
    """(leader, leader epoch) per partition, as a Metadata request sees it now."""
    return {
        TopicPartition(t.name, p.partition): (p.leader, p.leader_epoch)
        for t in await admin.describe_topics(sorted(set(topics)))
        for p in t.partitions
    }


async def rotate_leadership(
    admin: AdminClient, topics: Iterable[str], *, poll_interval: float = 0.1
) -> dict[TopicPartition, int]:
    """Move every partition's leadership to its next replica; return the new leaders.

    Waits until the elections have taken effect: bound it with ``anyio.fail_after``.
    """
    names = sorted(set(topics))
    described = await admin.describe_topics(names)
    plan = {
        TopicPartition(t.name, p.partition): [*p.replicas[1:], p.replicas[0]]
        for t in described
        for p in t.partitions
        if len(p.replicas) > 1
    }
    if not plan:
        return {}
    await admin.alter_partition_reassignments(plan)
    wanted = {tp: replicas[0] for tp, replicas in plan.items()}
    while True:
        leaders = await current_leaders(admin, names)
        pending = [tp for tp, (leader, _) in leaders.items() if tp in wanted and leader != wanted[tp]]
        if not pending:
            return wanted
        await admin.elect_leaders("preferred", pending)
        await anyio.sleep(poll_interval)
