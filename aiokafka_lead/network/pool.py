"""BrokerPool: node_id -> Connection, aware of endpoints.

* Per-node connect lock: one slow broker never blocks connecting to the others, and
  concurrent callers for one node share a single connect attempt.
* Endpoint-aware: when Metadata or KIP-951 NodeEndpoints give a node a new host/port,
  the old connection is retired and the next request dials the new address.
* Reconnect backoff per node (exponential, jittered); bootstrap servers are used until
  metadata names the brokers, and again when no known broker is reachable (KIP-899).
* Authentication failures are not retried: they surface at once.
* A group coordinator gets a second connection of its own (``coordinator=True``), as in
  Java and librdkafka: brokers answer one request per connection at a time, and a
  JoinGroup is held for a whole rebalance, which would stall fetches queued behind it.
* The producer's express lane (``lane=1``) is another second connection per node: an
  acks=all produce parked in a broker's purgatory holds back everything behind it on its
  connection; what must not wait behind it goes there (DESIGN.md invariant 22).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.abc

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.errors import KafkaConnectionError, KafkaError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.network.metrics import ConnectionStats
from aiokafka_lead.ratelog import RateLimitedLog

log = logging.getLogger(__name__)

#: coordinator connections are keyed ``COORDINATOR_KEY_BASE - node_id`` (Java's scheme)
COORDINATOR_KEY_BASE = 2**31 - 1
#: the producer's lane-1 connections are keyed ``LANE_KEY_BASE - node_id``
LANE_KEY_BASE = 2**30 - 1


def _key(node_id: int, coordinator: bool, lane: int) -> int:
    """A node's connection key: its own id, or its coordinator's or second lane's."""
    if coordinator:
        return COORDINATOR_KEY_BASE - node_id
    if lane:
        return LANE_KEY_BASE - node_id
    return node_id


def _node_of(key: int) -> int:
    if key > COORDINATOR_KEY_BASE // 2:
        return COORDINATOR_KEY_BASE - key
    if key > LANE_KEY_BASE // 2:
        return LANE_KEY_BASE - key
    return key


class Node(Protocol):
    """A broker as the pool needs it: its id and address."""

    @property
    def node_id(self) -> int: ...

    @property
    def address(self) -> tuple[str, int]: ...


class NodesChange(Protocol):
    """What a metadata change says about brokers."""

    @property
    def nodes_changed(self) -> set[int]: ...

    @property
    def nodes_removed(self) -> set[int]: ...


class NodeDirectory(Protocol):
    """Where the pool finds broker addresses (the client's MetadataStore)."""

    def node(self, node_id: int) -> Node | None: ...

    def nodes(self) -> Sequence[Node]: ...

    def request_refresh(self, reason: str) -> None: ...

    def add_listener(self, listener: Callable[[NodesChange], None]) -> None: ...

    def remove_listener(self, listener: Callable[[NodesChange], None]) -> None: ...


@dataclass(slots=True)
class _NodeState:
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    conn: Connection | None = None
    failures: int = 0
    next_attempt: float = 0.0
    last_error: str | None = None  # of the last connect attempt, None after a success


class BrokerPool:
    """Connections of one client, keyed by node id (bootstrap addresses by negative ids)."""

    def __init__(
        self,
        store: NodeDirectory,
        config: ConnectionConfig,
        task_group: anyio.abc.TaskGroup,
        stats: ConnectionStats | None = None,
    ) -> None:
        self._store = store
        self._config = config
        self._tg = task_group
        self._nodes: dict[int, _NodeState] = {}
        self._backoff = ExponentialBackoff(config.reconnect_backoff_ms, config.reconnect_backoff_max_ms)
        self._closed = False
        self._rebootstrap = False
        self._warn = RateLimitedLog(log)
        self.connects = 0
        #: authentications, KIP-368 re-authentications, connections closed by brokers
        self.stats = stats if stats is not None else ConnectionStats()
        store.add_listener(self._on_metadata_change)

    @property
    def config(self) -> ConnectionConfig:
        return self._config

    # ------------------------------------------------------------------ lookups
    def _address(self, key: int) -> tuple[str, int] | None:
        node_id = _node_of(key)
        if node_id < 0:
            index = -node_id - 1
            return self._config.bootstrap[index] if index < len(self._config.bootstrap) else None
        node = self._store.node(node_id)
        return None if node is None else node.address

    def last_error(self, node_id: int) -> str | None:
        """Why the last connect to ``node_id`` failed (None if it did not, or none was tried)."""
        state = self._nodes.get(node_id)
        return None if state is None else state.last_error

    def live_connection(self, node_id: int) -> Connection | None:
        state = self._nodes.get(node_id)
        conn = None if state is None else state.conn
        if conn is None or conn.closed or (conn.host, conn.port) != self._address(node_id):
            return None
        return conn

    def live(self, node_id: int, *, lane: int = 0) -> Connection | None:
        """The connection :meth:`connection` would return without waiting, if there is one."""
        return self.live_connection(_key(node_id, False, lane))

    async def connection(self, node_id: int, *, coordinator: bool = False, lane: int = 0) -> Connection:
        """The live connection to ``node_id``, dialling (after any reconnect backoff) if needed;
        ``coordinator``: the node's second connection, for group coordination only;
        ``lane=1``: the producer's second connection to the node (lanes.py)."""
        node_id = _key(node_id, coordinator, lane)
        conn = self.live_connection(node_id)
        if conn is not None:
            return conn
        if self._closed:
            raise KafkaConnectionError("the client is closed")
        state = self._nodes.setdefault(node_id, _NodeState())
        async with state.lock:
            conn = self.live_connection(node_id)
            if conn is not None:
                return conn
            address = self._address(node_id)
            if address is None:
                raise KafkaConnectionError(f"node {node_id} is not in the cluster metadata")
            wait = state.next_attempt - time.monotonic()
            if wait > 0:
                await anyio.sleep(wait)
            return await self._dial(node_id, address, state)

    async def _dial(self, node_id: int, address: tuple[str, int], state: _NodeState) -> Connection:
        conn = Connection(address[0], address[1], self._config, node_id=_node_of(node_id), stats=self.stats)
        self.connects += 1
        try:
            await self._tg.start(conn.run)
        except KafkaError as exc:
            if not exc.retriable:
                raise  # wrong credentials, unsupported mechanism: no silent retry loop
            state.next_attempt = time.monotonic() + self._backoff.delay_s(state.failures)
            state.failures += 1
            state.last_error = str(exc)
            where = f"node {_node_of(node_id)} at {address[0]}:{address[1]}"
            if node_id >= 0:
                self._store.request_refresh(f"connect failed: {where}")
            if state.failures >= 2:  # keeps failing: tell the operator, once in a while
                self._warn.warning(
                    ("connect", address),
                    "%s: %d connect attempts in a row failed; retrying with backoff; last: %s",
                    where if node_id >= 0 else f"bootstrap server {address[0]}:{address[1]}",
                    state.failures,
                    exc,
                )
            raise
        if state.failures >= 2:
            log.info("connected to node %d at %s:%d again", _node_of(node_id), *address)
        self._warn.clear(("connect", address))
        state.failures = 0
        state.last_error = None
        state.next_attempt = 0.0
        old, state.conn = state.conn, conn
        if old is not None and not old.closed:
            self._tg.start_soon(old.close)
        log.debug("connected to node %d at %s:%d", node_id, *address)
        return conn

    def _candidates(self) -> list[int]:
        """Order to try for "any broker": live and idle first, then known nodes, then bootstrap."""
        live = [
            (c.in_flight, nid)
            for nid in self._nodes
            if 0 <= nid < LANE_KEY_BASE // 2 and (c := self.live_connection(nid)) is not None
        ]
        known = [n.node_id for n in self._store.nodes()]
        random.shuffle(known)
        boot = [-(i + 1) for i in range(len(self._config.bootstrap))]
        random.shuffle(boot)
        if self._rebootstrap:
            ordered = boot + [nid for _, nid in sorted(live)] + known
        else:
            ordered = [nid for _, nid in sorted(live)] + known + boot
        return list(dict.fromkeys(ordered))

    def forget_nodes(self) -> None:
        """KIP-1102 REBOOTSTRAP_REQUIRED: prefer the bootstrap servers until one answers."""
        self._rebootstrap = True

    async def any_connection(self) -> Connection:
        """A connection to any reachable broker; re-bootstraps when no known broker answers."""
        errors: list[str] = []
        kinds: set[type[KafkaConnectionError]] = set()
        for node_id in self._candidates():
            state = self._nodes.get(node_id)
            if state is not None and state.next_attempt > time.monotonic() and state.conn is None:
                errors.append(f"node {node_id}: in reconnect backoff")
                continue
            try:
                conn = await self.connection(node_id)
            except KafkaConnectionError as exc:
                errors.append(str(exc))
                kinds.add(type(exc))
                continue
            if node_id < 0:
                self._rebootstrap = False
            return conn
        # one cause behind every failure (a token endpoint that is down): its class is kept
        kind = kinds.pop() if len(kinds) == 1 else KafkaConnectionError
        raise kind("no broker reachable: " + "; ".join(errors))

    async def send(self, node_id: int, request: Any, **kwargs: Any) -> Any:
        conn = await self.connection(node_id)
        return await conn.send(request, **kwargs)

    # --------------------------------------------------------------- maintenance
    def _on_metadata_change(self, change: NodesChange) -> None:
        changed = change.nodes_changed | change.nodes_removed
        keys = {base - n for n in changed for base in (COORDINATOR_KEY_BASE, LANE_KEY_BASE)}
        for node_id in changed | keys:
            state = self._nodes.get(node_id)
            conn = None if state is None else state.conn
            if conn is None or conn.closed:
                continue
            if (conn.host, conn.port) != self._address(node_id):
                log.info("node %d moved or left; retiring %r", node_id, conn)
                assert state is not None
                state.conn = None
                state.failures = 0
                state.next_attempt = 0.0
                self._tg.start_soon(conn.close)

    async def reap_idle(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Background: close connections idle for longer than connections_max_idle_ms."""
        idle_s = self._config.connections_max_idle_ms / 1000
        task_status.started()
        while True:
            await anyio.sleep(max(idle_s / 4, 0.05))
            now = time.monotonic()
            for state in self._nodes.values():
                conn = state.conn
                if (
                    conn is not None
                    and not conn.closed
                    and conn.in_flight == 0
                    and now - conn.last_used > idle_s
                ):
                    state.conn = None
                    await conn.close()

    async def close(self) -> None:
        """Close every connection (their read loops then end, freeing the task group)."""
        self._closed = True
        self._store.remove_listener(self._on_metadata_change)
        conns = [s.conn for s in self._nodes.values() if s.conn is not None]
        for state in self._nodes.values():
            state.conn = None
        for conn in conns:
            await conn.close()
