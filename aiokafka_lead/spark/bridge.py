"""Running the async clients from Spark's synchronous callbacks.

Planning on the driver opens an anyio blocking portal (an event loop in a helper thread)
for the call. On executors, a Python worker keeps its clients across the tasks it runs
(Spark reuses workers by default): one portal and one client per set of options, made by
the first task that needs it, dropped when a task fails with it, closed when the worker
exits. So a task opens no connection of its own.
"""

from __future__ import annotations

import atexit
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

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


class ClientCache:
    """One started client per key, each on its own portal, for the life of the worker."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[Any, tuple[ExitStack, BlockingPortal, Any]] = {}
        atexit.register(self.close_all)

    def get(self, key: Any, make: Callable[[], Any]) -> tuple[BlockingPortal, Any]:
        """The client for ``key``, made and started by ``make()`` on first use."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                stack = ExitStack()
                p = stack.enter_context(portal())
                try:
                    client = make()
                    p.call(client.start)
                except BaseException:
                    stack.close()
                    raise
                stack.callback(p.call, client.stop)
                entry = self._entries[key] = (stack, p, client)
            return entry[1], entry[2]

    def drop(self, key: Any) -> None:
        """Close the client of ``key`` (after a failure: its state is unknown)."""
        with self._lock:
            entry = self._entries.pop(key, None)
        if entry is not None:
            entry[0].close()

    def close_all(self) -> None:
        for key in list(self._entries):
            self.drop(key)

    def __len__(self) -> int:
        return len(self._entries)


#: the executor's clients (readers' consumers, writers' producers)
clients = ClientCache()


def list_offsets(
    p: BlockingPortal, admin: AdminClient, partitions: list[TopicPartition], spec: int, isolation: str
) -> dict[TopicPartition, int]:
    return offsets_for(p, admin, dict.fromkeys(partitions, spec), isolation)


def offsets_for(
    p: BlockingPortal, admin: AdminClient, specs: dict[TopicPartition, int], isolation: str
) -> dict[TopicPartition, int]:
    """ListOffsets: per partition EARLIEST (-2), LATEST (-1) or a timestamp in ms (the first
    offset at or after it; -1 when there is none)."""
    if not specs:
        return {}
    result = p.call(admin.list_offsets, specs, isolation)
    return {tp: info.offset for tp, info in result.items()}
