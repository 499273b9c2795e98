"""What the comparison benchmarks share: one client per child process, grouped bar charts.

A benchmark runs each client in its own process (so one client's threads, GC and imports
never disturb another's), relays the child's ``PROGRESS`` lines and keeps its ``RESULT``
line; the charts are bars of medians with min-max whiskers, one bar per client per group.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream


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
            code = await proc.wait()
    if code != 0 or result is None:
        raise RuntimeError(f"{cmd[1:3]} exited {code}: {errors.decode(errors='replace')}")
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
