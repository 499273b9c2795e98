"""FakeCluster: N in-process brokers speaking the real Kafka protocol over loopback TCP.

A test tool, not a broker: state lives in plain Python objects mutated synchronously, so
a scenario (move a leader, freeze a broker's metadata, fail the next Fetch) takes effect
exactly between two requests. Real brokers move leaders on their own timing; this one
moves them when the test says so, which is what exact KIP-951 scenarios need.

    async with FakeCluster(brokers=3) as fc:
        fc.create_topic("t", partitions=2)
        ...  # point a client at fc.bootstrap
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Self

import anyio
import anyio.abc

from aiokafka_lead.runtime import ExitOnLeave, TaskGroupHost
from aiokafka_lead.testing.fake.broker import FakeBroker
from aiokafka_lead.testing.fake.core import TP, Topic
from aiokafka_lead.testing.fake.groups import GroupCoordinator
from aiokafka_lead.testing.fake.intercept import InterceptFn, Interceptor, Interceptors
from aiokafka_lead.testing.fake.log import RequestLog, RequestRecord
from aiokafka_lead.testing.fake.partition import Partition
from aiokafka_lead.testing.fake.share_groups import ShareCoordinator
from aiokafka_lead.testing.fake.telemetry import FakeTelemetry
from aiokafka_lead.testing.fake.transactions import TxnCoordinator
from aiokafka_lead.testing.fake.view import MetadataView, ReplicaSelector

GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY = 71, 72

HINT_MODES = ("current", "none", "stale", "same_epoch", "unknown_node", "endpoints_only")

Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


class FakeClusterError(Exception):
    """Raised on leaving a strict FakeCluster that saw a handler bug or a bad request."""


class FakeCluster(ExitOnLeave):
    """An in-process Kafka cluster for tests; use it as ``async with FakeCluster() as fc``."""

    def __init__(
        self,
        brokers: int = 3,
        *,
        max_versions: Mapping[int, int] | None = None,
        cluster_id: str = "fake-cluster",
        host: str = "127.0.0.1",
        strict: bool = True,
        auto_create_topics: bool = False,
        default_partitions: int = 1,
        telemetry: FakeTelemetry | None = None,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self.cluster_id = cluster_id
        #: the KIP-714 receiver; without one the brokers advertise neither telemetry API
        self.telemetry = telemetry
        caps = dict(max_versions or {})
        if telemetry is None:
            caps.update({GET_TELEMETRY_SUBSCRIPTIONS: -1, PUSH_TELEMETRY: -1})
        self.brokers: dict[int, FakeBroker] = {
            node_id: FakeBroker(self, node_id, host, dict(caps))
            for node_id in range(1, brokers + 1)
        }
        self.topics: dict[str, Topic] = {}
        self.requests = RequestLog()
        self.groups = GroupCoordinator(self)
        #: share groups (KIP-932) and the brokers' share sessions
        self.shares = ShareCoordinator(self)
        #: transactional ids; ``txns.transaction_version`` is the finalized feature level
        self.txns = TxnCoordinator(self, self.groups)
        #: exceptions raised by handlers (bugs in the fake); each closed its connection
        self.handler_errors: list[BaseException] = []
        #: requests the fake could not parse or does not support (client bugs); each closed
        #: its connection, as a Java broker does
        self.protocol_errors: list[Exception] = []
        self.strict = strict
        #: Metadata may create unknown topics (auto.create.topics.enable); off by default
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.hidden_nodes: set[int] = set()
        #: KIP-392: the brokers' ``replica.selector`` (``rack_aware_selector`` or a callable
        #: ``(cluster, partition, client rack, fetch offset) -> node id | None``); with one,
        #: leaders may name a PreferredReadReplica and followers serve Fetch v11+
        self.replica_selector: ReplicaSelector | None = None
        self.coordinator_overrides: dict[tuple[int, str], int] = {}
        self._lag: dict[int, MetadataView] = {}
        #: the scripted faults (:meth:`intercept`) the brokers consult for each request
        self.interceptors = Interceptors()
        self._next_producer_id = 0
        self._host = TaskGroupHost("FakeCluster")
        self._changed: anyio.Event | None = None
        self._activity: anyio.Event | None = None

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Self:
        """Start every broker; on asyncio the block may be left from another task
        (pytest-asyncio fixtures), as with the clients (see ``aiokafka_lead.runtime``)."""
        self._changed = anyio.Event()
        self._activity = anyio.Event()
        await self._host.enter(self._start_brokers)
        return self

    async def _start_brokers(self, tg: anyio.abc.TaskGroup) -> None:
        for broker in self.brokers.values():
            await tg.start(broker.run)

    async def _exit(self, exc: BaseException | None) -> None:
        # Brokers never fail their task group, so the body's own exception (if any)
        # propagates as itself rather than wrapped in an ExceptionGroup.
        await self._host.stop()
        if self.strict and exc is None and (self.handler_errors or self.protocol_errors):
            first = (self.handler_errors or self.protocol_errors)[0]
            raise FakeClusterError(
                f"{len(self.handler_errors)} handler error(s), {len(self.protocol_errors)} "
                f"malformed or unsupported request(s); first: {first!r} "
                "(FakeCluster(strict=False) to allow)"
            ) from first

    @property
    def task_group(self) -> anyio.abc.TaskGroup:
        if self._host.task_group is None:
            raise RuntimeError("the FakeCluster is not running (use `async with`)")
        return self._host.task_group

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:p1,127.0.0.1:p2,..."`` for every running broker."""
        return ",".join(f"{b.host}:{b.port}" for b in self.brokers.values() if b.running)

    def address(self, node_id: int) -> tuple[str, int]:
        broker = self.brokers[node_id]
        return broker.host, broker.port

    async def restart_node(self, node_id: int, *, new_port: bool = False) -> None:
        """Close the node's listener and connections, then listen again (on a new port)."""
        broker = self.brokers[node_id]
        if new_port:
            # ask for a free port while the old one is still held, so the two cannot coincide
            # (port 0 after the stop may hand the just-freed port straight back)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind((broker.host, 0))
                fresh = probe.getsockname()[1]
        await broker.stop()
        if new_port:
            broker.port = fresh
        await self.task_group.start(broker.run)

    async def stop_node(self, node_id: int) -> None:
        """Stop listening and drop connections; metadata still lists the node (not fenced)."""
        await self.brokers[node_id].stop()

    async def start_node(self, node_id: int) -> None:
        broker = self.brokers[node_id]
        if not broker.running:
            await self.task_group.start(broker.run)

    def cap_versions(self, max_versions: Mapping[int, int], node_ids: Sequence[int] | None = None) -> None:
        """Lower the advertised max version per api key (new connections see it)."""
        for node_id in node_ids or list(self.brokers):
            self.brokers[node_id].max_versions.update(max_versions)

    # --------------------------------------------------------------------- topics
    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 3,
        leaders: Sequence[int] | None = None,
        *,
        max_message_bytes: int | None = None,
    ) -> uuid.UUID:
        """Create a topic (replicas round-robin over the nodes); returns its topic id.

        ``max_message_bytes``: like the topic config, a produced batch larger than this is
        answered MESSAGE_TOO_LARGE (and not appended)."""
        if name in self.topics:
            raise ValueError(f"topic {name!r} already exists")
        node_ids = sorted(self.brokers)
        rf = min(replication_factor, len(node_ids))
        start = len(self.topics)
        parts: list[Partition] = []
        for index in range(partitions):
            replicas = [node_ids[(start + index + j) % len(node_ids)] for j in range(rf)]
            if leaders is not None:
                leader = leaders[index]
                if leader not in self.brokers:
                    raise ValueError(f"leader {leader} is not a node of this cluster")
                replicas = [leader, *[r for r in replicas if r != leader]][: max(rf, 1)]
            parts.append(Partition(name, index, replicas, replicas[0]))
        topic = Topic(name, uuid.uuid4(), parts, max_message_bytes)
        self.topics[name] = topic
        self.notify()
        return topic.topic_id

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def partition(self, tp: TP) -> Partition:
        topic, index = tp
        return self.topics[topic].partitions[index]

    def find_partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    # ------------------------------------------------------------ scenario knobs
    def move_leader(self, tp: TP, to_node: int, *, hint: str = "current") -> int:
        """Elect ``to_node`` at the next leader epoch; returns the new epoch.

        ``hint`` decides what the other brokers put in KIP-951 CurrentLeader/NodeEndpoints
        when they answer NOT_LEADER_OR_FOLLOWER for this partition (see docs/testing.md).
        """
        if hint not in HINT_MODES:
            raise ValueError(f"hint must be one of {HINT_MODES}, not {hint!r}")
        if to_node not in self.brokers:
            raise ValueError(f"node {to_node} is not in the cluster")
        part = self.partition(tp)
        if to_node not in part.replicas:
            part.replicas.append(to_node)
        part.elect(to_node)
        part.hint = hint
        if hint == "endpoints_only":
            self.hidden_nodes.add(to_node)
        self.notify()
        return part.leader_epoch

    def lag_metadata(self, node_ids: Sequence[int], partitions: Sequence[TP] | None = None) -> None:
        """Freeze the Metadata view of ``node_ids`` (node addresses, leaders and epochs of
        ``partitions``, default all) until :meth:`unlag_metadata`."""
        for node_id in node_ids:
            view = MetadataView(nodes={n: self.address(n) for n in self.brokers})
            chosen = partitions if partitions is not None else [
                (t.name, p.index) for t in self.topics.values() for p in t.partitions
            ]
            for tp in chosen:
                part = self.partition(tp)
                view.partitions[(tp[0], tp[1])] = (part.leader_id, part.leader_epoch)
            self._lag[node_id] = view

    def unlag_metadata(self, node_ids: Sequence[int] | None = None) -> None:
        for node_id in list(self._lag) if node_ids is None else node_ids:
            self._lag.pop(node_id, None)

    def metadata_view(self, node_id: int) -> MetadataView | None:
        return self._lag.get(node_id)

    def unhide_nodes(self) -> None:
        """List nodes hidden by ``hint="endpoints_only"`` in Metadata again."""
        self.hidden_nodes.clear()

    def truncate(self, tp: TP, offset: int) -> None:
        """Cut the log back to ``offset`` (KIP-320 divergence scenarios)."""
        self.partition(tp).truncate(offset)
        self.notify()

    def set_coordinator(self, key: str, node_id: int, key_type: int = 0) -> None:
        """Pin the coordinator of a group (key_type 0) or transactional id (1)."""
        self.coordinator_overrides[(key_type, key)] = node_id

    def coordinator_for(self, key: str, key_type: int = 0) -> int:
        pinned = self.coordinator_overrides.get((key_type, key))
        if pinned is not None:
            return pinned
        node_ids = sorted(self.brokers)
        return node_ids[sum(key.encode()) % len(node_ids)]

    def next_producer_id(self) -> int:
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid

    # -------------------------------------------------------------- interception
    def intercept(self, api_key: int, fn: InterceptFn, *, times: int | None = 1) -> Interceptor:
        """Consult ``fn(node_id, header, request)`` for each request of ``api_key``."""
        return self.interceptors.add(api_key, fn, times)

    def clear_intercepts(self) -> None:
        self.interceptors.clear()

    # ------------------------------------------------------------- observability
    def log_request(self, record: RequestRecord) -> None:
        self.requests.append(record)
        self._wake_activity()

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Return once ``predicate()`` holds, re-checking after every request and change.

        Bound it with ``anyio.fail_after``; e.g. ``await fc.wait_for(lambda: fc.count(1) > 0)``
        waits until a Fetch has reached a broker, without sleeping.
        """
        while not predicate():
            assert self._activity is not None
            await self._activity.wait()

    def _wake_activity(self) -> None:
        if self._activity is not None:
            self._activity.set()
            self._activity = anyio.Event()

    def count(
        self, api_key: int | None = None, node_id: int | None = None, since: float | None = None
    ) -> int:
        """How many requests matched (``since``: a ``time.monotonic()`` value)."""
        return self.requests.count(api_key, node_id, since)

    @staticmethod
    def now() -> float:
        """A timestamp for ``count(since=...)``."""
        return time.monotonic()

    def leader(self, tp: TP) -> int:
        return self.partition(tp).leader_id

    def leader_epoch(self, tp: TP) -> int:
        return self.partition(tp).leader_epoch

    def records(self, tp: TP) -> list[Record]:
        return self.partition(tp).records()

    def high_watermark(self, tp: TP) -> int:
        return self.partition(tp).high_watermark

    # ------------------------------------------------------------ notifications
    def notify(self) -> None:
        """Wake every long-polling Fetch so it re-checks (appends, moves, truncation)."""
        if self._changed is not None:
            self._changed.set()
            self._changed = anyio.Event()
        self._wake_activity()

    async def wait_changed(self) -> None:
        assert self._changed is not None
        await self._changed.wait()
