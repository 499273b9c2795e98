"""What the comparison benchmarks share: one client per child process, grouped bar charts.

A benchmark runs each client in its own process (so one client's threads, GC and imports
never disturb another's), relays the child's ``PROGRESS`` lines and keeps its ``RESULT``
line; the charts are bars of medians with min-max whiskers, one bar per client per group.
The orchestration around it is shared too: the common options, the local 1-node cluster
(or an external one), a fresh topic per client, the client order rotating between runs,
median/min/max summaries and the JSON result file.
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import resource
import statistics
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

if TYPE_CHECKING:
    from aiokafka_lead.admin import AdminClient


def say(message: str) -> None:
    print(message, flush=True)


def peer_versions() -> dict[str, str]:
    """Versions of the peers the benchmarks compare against (the ``bench`` extra)."""
    import aiokafka
    import confluent_kafka

    return {
        "aiokafka": str(aiokafka.__version__),
        "confluent": str(confluent_kafka.__version__),
        "librdkafka": str(confluent_kafka.libversion()[0]),
    }


async def run_child(
    cmd: Sequence[str],
    *,
    limit_s: float,
    on_progress: Callable[[int], None],
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``cmd``; ``PROGRESS <n>`` lines go to ``on_progress``; returns the ``RESULT <json>``.

    A non-zero exit or a missing result raises ``RuntimeError`` with the child's stderr tail.
    """
    errors = bytearray()
    result: dict[str, Any] | None = None
    full_env = {**os.environ, **(env or {})}
    async with await anyio.open_process(list(cmd), env=full_env) as proc, anyio.create_task_group() as tg:
        assert proc.stdout is not None and proc.stderr is not None
        stderr = proc.stderr

        async def drain_stderr() -> None:
            async for chunk in stderr:
                errors.extend(chunk)
                del errors[:-4000]

        tg.start_soon(drain_stderr)
        lines = BufferedByteReceiveStream(proc.stdout)
        with anyio.fail_after(limit_s):
            while True:
                try:
                    line = (await lines.receive_until(b"\n", 1 << 20)).decode()
                except (anyio.EndOfStream, anyio.IncompleteRead):
                    break
                if line.startswith("PROGRESS "):
                    on_progress(int(line.split()[1]))
                elif line.startswith("RESULT "):
                    result = json.loads(line[len("RESULT ") :])
            exit_code = await proc.wait()
    if exit_code != 0 or result is None:
        raise RuntimeError(f"{cmd[1:3]} exited {exit_code}: {errors.decode(errors='replace')}")
    return result


def bar_panel(
    ax: Any,
    groups: Sequence[str],
    cells: Mapping[str, Sequence[Mapping[str, float]]],
    *,
    scale: float,
    fmt: str,
    colors: Mapping[str, str],
    labels: Mapping[str, str],
) -> None:
    """One bar per client (``cells[kind][i]``: median/min/max for group ``i``), whiskers min-max."""
    kinds = list(cells)
    width = 0.8 / len(kinds)
    for i, kind in enumerate(kinds):
        xs = [j + (i - (len(kinds) - 1) / 2) * width for j in range(len(groups))]
        med = [c["median"] / scale for c in cells[kind]]
        err = [
            [(c["median"] - c["min"]) / scale for c in cells[kind]],
            [(c["max"] - c["median"]) / scale for c in cells[kind]],
        ]
        bars = ax.bar(xs, med, width, yerr=err, capsize=4, color=colors[kind], label=labels[kind])
        ax.bar_label(bars, fmt=fmt, padding=3, fontsize=8)
    ax.set_xticks(range(len(groups)), list(groups))
    ax.grid(True, axis="y", alpha=0.3)


def save_bars(
    path: Path,
    title: str,
    panels: Sequence[tuple[str, Sequence[str], Mapping[str, Sequence[Mapping[str, float]]], float, str]],
    *,
    colors: Mapping[str, str],
    labels: Mapping[str, str],
    figsize: tuple[float, float],
) -> Path:
    """A row of :func:`bar_panel` charts, ``(ylabel, groups, cells, scale, fmt)`` each, saved."""
    import matplotlib  # the [plot] extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, grid = plt.subplots(1, len(panels), figsize=figsize, squeeze=False)
    axes = list(grid[0])
    for ax, (ylabel, groups, cells, scale, fmt) in zip(axes, panels, strict=True):
        bar_panel(ax, groups, cells, scale=scale, fmt=fmt, colors=colors, labels=labels)
        ax.set_ylabel(ylabel)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(panels[0][2]))
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ orchestration

#: client kind -> its name in tables and plots (a benchmark adds its own variants)
PEER_LABELS = {"ours": "aiokafka_lead", "aiokafka": "aiokafka", "confluent": "confluent-kafka"}


def comparison_parser(description: str, *, clients: str) -> argparse.ArgumentParser:
    """The options every comparison benchmark takes; the benchmark adds its own."""
    from aiokafka_lead.testing.cluster.jars import DEFAULT_KAFKA_VERSION

    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bootstrap-server")
    parser.add_argument("--clients", default=clients)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=600, help="seconds per client process")
    parser.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION)
    parser.add_argument("--machine", default="2 cores, 24 GiB, loopback")
    return parser


#: the client that is aiokafka_lead imported from another checkout (``--baseline DIR``)
BASELINE_CLIENT = "ours-base"


def add_baseline_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline", type=Path, help=f"a checkout of aiokafka_lead to run as the client {BASELINE_CLIENT}"
    )


async def read_line(proc: anyio.abc.Process, what: str, within_s: float) -> str:
    """The child's next line on stdout (``what`` if it is empty), waiting up to ``within_s``."""
    assert proc.stdout is not None
    with anyio.fail_after(within_s):
        line = await BufferedByteReceiveStream(proc.stdout).receive_until(b"\n", 4096)
    return line.decode(errors="replace").strip() or what


def children_cpu_s() -> float:
    """CPU time (user + system) of every child process waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu_s(pid: int) -> float:
    """A running process's CPU time so far, all its threads (Linux; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def compile_bytecode(*checkouts: Path | None) -> None:
    """Write aiokafka_lead's bytecode in each checkout, as installing the wheel does (pip
    compiles what it installs). An editable install (or ``PYTHONDONTWRITEBYTECODE``) leaves
    it out, and each client process would compile the package from source at start (~0.3 s
    of CPU on the benchmark machine), which the peers, installed from PyPI, do not."""
    for root in checkouts:
        if root is not None:
            compileall.compile_dir(str(root / "aiokafka_lead"), quiet=1)


def baseline_env(baseline: Path | None) -> dict[str, str]:
    """The environment variables that make a child import aiokafka_lead from ``baseline``."""
    if baseline is None:
        raise SystemExit(f"the client {BASELINE_CLIENT} needs --baseline DIR")
    return {"PYTHONPATH": str(baseline)}


def client_kinds(args: argparse.Namespace, labels: Mapping[str, str]) -> list[str]:
    """``--clients`` as a list; an unknown name exits with the names it does not know."""
    kinds: list[str] = args.clients.split(",")
    if unknown := set(kinds) - set(labels):
        raise SystemExit(f"unknown clients: {', '.join(sorted(unknown))}")
    return kinds


def client_order(kinds: Sequence[str], run: int) -> list[str]:
    """Run ``run``'s client order: reversed every other run and rotated by one every two, so
    over ``2 * len(kinds)`` runs each client goes first and last, and a noisy neighbour (or
    the first run on a fresh topic) does not always hit the same client."""
    shift = (run // 2) % len(kinds)
    order = [*kinds[shift:], *kinds[:shift]]
    if run % 2:
        order.reverse()
    return order


@asynccontextmanager
async def comparison_cluster(args: argparse.Namespace, prefix: str) -> AsyncIterator[str]:
    """The bootstrap address: ``--bootstrap-server``, or a local KRaft cluster (``args.brokers``
    nodes, default 1) with the benchmark JVM settings, stopped on the way out (shielded from
    cancellation)."""
    from aiokafka_lead.testing.cluster import KafkaCluster

    if args.bootstrap_server is not None:
        yield args.bootstrap_server
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        brokers = getattr(args, "brokers", 1)
        say(f"starting a local {brokers}-node KRaft cluster (benchmark JVM settings)...")
        cluster = KafkaCluster(tmp, brokers=brokers, benchmark=True)
        await anyio.to_thread.run_sync(cluster.up)
        try:
            changed = ", ".join(f"{k}={v}" for k, v in cluster.non_default_settings().items())
            say(f"broker profile: {cluster.profile}; differs from Kafka's defaults: {changed or 'nothing'}")
            yield cluster.bootstrap()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(cluster.down)


@asynccontextmanager
async def fresh_topic(
    admin: AdminClient,
    prefix: str,
    partitions: int,
    replication: int = 1,
    configs: dict[str, str] | None = None,
) -> AsyncIterator[str]:
    """A new topic ``<prefix>-<random>`` for one client's run, deleted afterwards."""
    from aiokafka_lead.admin import NewTopic

    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    await admin.create_topics([NewTopic(topic, partitions, replication, topic_configs=configs or {})])
    try:
        yield topic
    finally:
        await admin.delete_topics([topic])


async def run_with_progress(
    cmd: Sequence[str],
    line: Callable[[int, float], str],
    *,
    limit_s: float,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """:func:`run_child`, its progress shown on one console line (``line(done, started)``),
    cleared when the child ends."""

    def progress(done: int) -> None:
        print("\r" + line(done, started), end="", flush=True)

    started = anyio.current_time()
    try:
        return await run_child(cmd, limit_s=limit_s, on_progress=progress, env=env)
    finally:
        print("\r" + " " * 78 + "\r", end="", flush=True)


def spread_of(values: Sequence[float], *, keep: bool = True) -> dict[str, Any]:
    """Median, min and max of one metric over the runs (``all`` of them with ``keep``)."""
    out: dict[str, Any] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    if keep:
        out["all"] = list(values)
    return out


def ratio_text(r: Mapping[str, float] | None) -> str:
    """A per-run ratio summary as ``1.23x (1.10-1.31)``; ``-`` without one."""
    return f"{r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f})" if r else "-"


def run_env(args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    """Where the numbers were measured: machine, Kafka, Python and the peers' versions."""
    return {
        "machine": args.machine,
        **extra,
        "kafka": args.kafka_version if args.bootstrap_server is None else "external",
        "python": sys.version.split()[0],
        **peer_versions(),
    }
