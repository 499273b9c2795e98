"""Running the async clients from Spark's synchronous callbacks.

Each Spark callback (plan partitions, read a range, write a task's rows) opens an anyio
blocking portal: an event loop in a helper thread that lives as long as the callback, so a
consumer or producer keeps its connections across calls and nothing leaks between tasks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from anyio.from_thread import BlockingPortal, start_blocking_portal

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.spark.options import SourceOptions
from aiokafka_lead.structs import TopicPartition


@contextmanager
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal(backend="asyncio") as p:
        yield p


@contextmanager
def admin_session(opts: SourceOptions) -> Iterator[tuple[BlockingPortal, AdminClient]]:
    with portal() as p:
        admin = AdminClient(bootstrap_servers=opts.bootstrap_servers, **opts.client_kwargs())
        p.call(admin.start)
        try:
            yield p, admin
        finally:
            p.call(admin.close)


def subscribed_partitions(
    p: BlockingPortal, admin: AdminClient, opts: SourceOptions
) -> list[TopicPartition]:
    """The partitions the subscription covers now (patterns and new partitions included)."""
    if opts.assign:
        return [TopicPartition(t, n) for t, n in opts.assign]
    if opts.subscribe:
        topics = list(opts.subscribe)
    else:
        pattern = re.compile(opts.subscribe_pattern or "")
        topics = [t for t in p.call(admin.list_topics) if pattern.fullmatch(t)]
    if not topics:
        return []
    described = p.call(admin.describe_topics, topics)
    return sorted(TopicPartition(t.name, part.partition) for t in described for part in t.partitions)


def list_offsets(
    p: BlockingPortal, admin: AdminClient, partitions: list[TopicPartition], spec: int, isolation: str
) -> dict[TopicPartition, int]:
    if not partitions:
        return {}
    result = p.call(admin.list_offsets, dict.fromkeys(partitions, spec), isolation)
    return {tp: info.offset for tp, info in result.items()}
