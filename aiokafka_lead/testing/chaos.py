"""A deterministic chaos schedule against the local KRaft cluster (the chaos tests, docs/chaos.md).

The schedule fixes WHAT happens and in which order (rotate leaders, controlled shutdown
and restart, SIGKILL and restart, restart on a new port); only the timing varies. Between
steps the runner waits on conditions (every node running and registered, every partition
of the watched topics led and fully in sync), each with a deadline, then pauses briefly
so the clients under test see traffic on the new layout before the next blow.

``heal()`` restarts whatever a failed or cancelled run left stopped and waits until the
cluster is whole again: call it in a ``finally`` so tests sharing the cluster find it
healthy. The node-control calls of ``KafkaCluster`` block, so they run in a worker thread.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

import anyio
import anyio.to_thread

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.errors import KafkaError
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.leaders import current_leaders, rotate_leadership


class ChaosOp(enum.Enum):
    ROTATE_LEADERS = "rotate_leaders"  # reorder replicas + preferred election, every partition
    STOP_START = "stop_start"  # SIGTERM (controlled shutdown), wait for leaders to move, start
    KILL_START = "kill_start"  # SIGKILL, wait until the controller moved its leaders, start
    RESTART_NEW_PORT = "restart_new_port"  # controlled shutdown, start on fresh client ports


@dataclass(frozen=True)
class ChaosStep:
    op: ChaosOp
    node_id: int | None = None

    def __str__(self) -> str:
        return self.op.value if self.node_id is None else f"{self.op.value}({self.node_id})"


#: The schedule both chaos tests run: every kind of disturbance, each node hit once.
DEFAULT_SCHEDULE: tuple[ChaosStep, ...] = (
    ChaosStep(ChaosOp.ROTATE_LEADERS),
    ChaosStep(ChaosOp.STOP_START, 2),
    ChaosStep(ChaosOp.ROTATE_LEADERS),
    ChaosStep(ChaosOp.KILL_START, 3),
    ChaosStep(ChaosOp.ROTATE_LEADERS),
    ChaosStep(ChaosOp.RESTART_NEW_PORT, 1),
    ChaosStep(ChaosOp.ROTATE_LEADERS),
)


@dataclass
class StepRecord:
    step: ChaosStep
    started_s: float  # since the run started
    duration_s: float
    leader_changes: int  # partitions of the watched topics whose leader changed


@dataclass
class ChaosReport:
    steps: list[StepRecord] = field(default_factory=list)
    duration_s: float = 0.0

    def count(self, op: ChaosOp) -> int:
        return sum(1 for r in self.steps if r.step.op is op)

    @property
    def leader_changes(self) -> int:
        return sum(r.leader_changes for r in self.steps)

    def summary(self) -> dict[str, object]:
        return {
            "steps": [str(r.step) for r in self.steps],
            "step_durations_s": [round(r.duration_s, 1) for r in self.steps],
            "leader_rotations": self.count(ChaosOp.ROTATE_LEADERS),
            "controlled_shutdowns": self.count(ChaosOp.STOP_START),
            "kills": self.count(ChaosOp.KILL_START),
            "new_port_restarts": self.count(ChaosOp.RESTART_NEW_PORT),
            "partition_leader_changes": self.leader_changes,
            "duration_s": round(self.duration_s, 1),
        }


class ChaosRunner:
    """Runs a schedule against ``cluster``; ``topics`` are watched for leaders and ISR.

    ``rotate_topics`` (default: ``topics``) are the ones whose leadership is rotated.
    """

    def __init__(
        self,
        cluster: KafkaCluster,
        topics: Iterable[str],
        *,
        schedule: Sequence[ChaosStep] = DEFAULT_SCHEDULE,
        rotate_topics: Iterable[str] | None = None,
        pause_s: float = 1.5,
        step_timeout_s: float = 90.0,
        on_step: Callable[[StepRecord], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.topics = sorted(set(topics))
        self.rotate_topics = sorted(set(rotate_topics)) if rotate_topics is not None else self.topics
        self.schedule = tuple(schedule)
        self.pause_s = pause_s
        self.step_timeout_s = step_timeout_s
        self.on_step = on_step
        self.report = ChaosReport()

    def _admin(self) -> AdminClient:
        # A fresh client per step: bootstrap() follows a node that moved to a new port.
        return AdminClient(
            bootstrap_servers=self.cluster.bootstrap(), request_timeout_ms=10_000, metadata_max_age_ms=1_000
        )

    async def run(self) -> ChaosReport:
        """Run every step in order; each one bounded by ``step_timeout_s``."""
        started = time.monotonic()
        try:
            for step in self.schedule:
                t0 = time.monotonic()
                with anyio.fail_after(self.step_timeout_s):
                    before = await self._leaders()
                    await self._do(step)
                    await self.settle()
                    after = await self._leaders()
                changed = sum(
                    1 for tp, (leader, _) in after.items() if before.get(tp, (leader, 0))[0] != leader
                )
                record = StepRecord(step, t0 - started, time.monotonic() - t0, changed)
                self.report.steps.append(record)
                if self.on_step is not None:
                    self.on_step(record)
                await anyio.sleep(self.pause_s)  # pacing: let clients work on the new layout
        finally:
            self.report.duration_s = time.monotonic() - started
        return self.report

    async def _do(self, step: ChaosStep) -> None:
        cluster = self.cluster
        node_id = step.node_id
        if step.op is ChaosOp.ROTATE_LEADERS:
            async with self._admin() as admin:
                await rotate_leadership(admin, self.rotate_topics)
            return
        if node_id is None:
            raise ValueError(f"{step.op.value} needs a node id")
        if step.op is ChaosOp.STOP_START:
            await anyio.to_thread.run_sync(lambda: cluster.stop_node(node_id))
            await self._wait_leaders_off(node_id)
            await anyio.to_thread.run_sync(lambda: cluster.start_node(node_id))
        elif step.op is ChaosOp.KILL_START:
            await anyio.to_thread.run_sync(lambda: cluster.kill_node(node_id))
            await self._wait_leaders_off(node_id)  # the session timeout expires first
            await anyio.to_thread.run_sync(lambda: cluster.start_node(node_id))
        elif step.op is ChaosOp.RESTART_NEW_PORT:
            await anyio.to_thread.run_sync(lambda: cluster.restart_node(node_id, new_port=True))

    async def _wait_leaders_off(self, node_id: int) -> None:
        """Until no watched partition is led by ``node_id`` (the controller moved them)."""

        async def moved() -> bool:
            leaders = await self._leaders()
            return all(leader not in (node_id, -1) for leader, _ in leaders.values())

        await _poll(moved)

    async def _leaders(self) -> dict[TopicPartition, tuple[int, int]]:
        """(leader, epoch) of every partition of the watched topics that exist."""
        async with self._admin() as admin:
            existing = set(await admin.list_topics())
            return await current_leaders(admin, [t for t in self.topics if t in existing])

    async def settle(self) -> None:
        """Until every node is registered and every partition of the watched topics that
        exist is led and fully in sync."""
        await _poll(lambda: anyio.to_thread.run_sync(self.cluster.is_up))

        async def in_sync() -> bool:
            async with self._admin() as admin:
                existing = set(await admin.list_topics())
                described = await admin.describe_topics([t for t in self.topics if t in existing])
            return all(
                p.leader >= 0 and set(p.isr) == set(p.replicas) for t in described for p in t.partitions
            )

        await _poll(in_sync)

    async def heal(self, timeout_s: float = 150.0) -> None:
        """Start every node a run left stopped; wait until the cluster is whole (ISR included)."""
        cluster = self.cluster
        with anyio.fail_after(timeout_s):
            for node_id in cluster.node_ids:
                if not await anyio.to_thread.run_sync(cluster.is_running, node_id):
                    await anyio.to_thread.run_sync(cluster.start_node, node_id)
            await self.settle()


async def _poll(predicate: Callable[[], Awaitable[bool]], interval_s: float = 0.25) -> None:
    """Await ``predicate()`` until true; errors of a cluster in motion count as "not yet".

    The caller's cancel scope is the deadline."""
    while True:
        try:
            if await predicate():
                return
        except (KafkaError, OSError):
            pass
        await anyio.sleep(interval_s)


__all__ = [
    "DEFAULT_SCHEDULE",
    "ChaosOp",
    "ChaosReport",
    "ChaosRunner",
    "ChaosStep",
    "StepRecord",
]
