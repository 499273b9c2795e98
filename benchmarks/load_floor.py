"""What the leader-move load costs by itself: its CPU with no client behind it.

The leader-move benchmark charges each client's process for its whole measured CPU: the
client's work and the load that drives it. The loads differ by client: ours and aiokafka
are driven from asyncio (a task that sleeps one 2 ms tick at a time, ``await send()`` per
record, a callback per acknowledgement), confluent-kafka by a plain loop of ``produce()``
and ``poll(0.002)``. This runs both loads with a null client, the same code as
``benchmarks/leader_move_client.py`` (``--client null-asyncio`` and ``null-sync``): every
record acknowledged at once (asyncio: inside ``send()``; sync: at the next ``poll()``,
which then sleeps its tick). Each run is its own process, rounds interleaved, and its CPU
is measured as the leader-move benchmark measures it, from the end of the warm-up to the
exit. No cluster is needed:

    python benchmarks/load_floor.py
    python benchmarks/load_floor.py --runs 5 --rate 2000 --duration 20

A client's measured CPU minus its load's floor is an upper bound of its own work: the null
client's loads do the least they can (no wake-up for an acknowledgement, no flush to wait
for). Writes ``benchmarks/results/load_floor.md`` and (with matplotlib) the plot
``docs/img/load_floor.png``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from aiokafka_lead.bench.children import (
    children_cpu_s,
    client_order,
    compile_bytecode,
    process_cpu_s,
    read_line,
    save_bars,
    say,
    spread_of,
)
from aiokafka_lead.bench.plot import NO_PLOT, can_plot

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "benchmarks" / "leader_move_client.py"
KINDS = ("null-asyncio", "null-sync")
LABELS = {
    "null-asyncio": "asyncio load (ours, aiokafka)",
    "null-sync": "sync load (confluent-kafka)",
}
COLORS = {"null-asyncio": "tab:blue", "null-sync": "tab:orange"}


async def measure(kind: str, args: argparse.Namespace, out: Path) -> float:
    """One run's CPU seconds from GO (the end of the warm-up) to the exit."""
    cmd = [sys.executable, str(CLIENT), "--client", kind, "--label", kind, "--bootstrap-server",
           "none", "--topic", "none", "--rate", str(args.rate), "--duration", str(args.duration),
           "--warmup", str(args.warmup), "--size", str(args.size), "--out", str(out)]  # fmt: skip
    before = children_cpu_s()
    async with await anyio.open_process(cmd) as proc:
        line = await read_line(proc, "GO", args.warmup + 60)
        if not line.startswith("GO "):
            raise RuntimeError(f"{kind}: expected GO, got {line!r}")
        at_go = process_cpu_s(proc.pid)
        with anyio.fail_after(args.duration + 60):
            code = await proc.wait()
    if code != 0:
        raise RuntimeError(f"{kind} exited {code}")
    return children_cpu_s() - before - at_go


async def run(args: argparse.Namespace) -> dict[str, list[float]]:
    cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory(prefix="load-floor-") as tmp:
        for run_index in range(args.runs):
            for kind in client_order(KINDS, run_index):
                seconds = args.warmup + args.duration
                say(f"run {run_index + 1}/{args.runs}: {LABELS[kind]}, {seconds:.0f} s ...")
                cpu[kind].append(await measure(kind, args, Path(tmp) / f"{kind}.json"))
                say(f"  measured CPU {cpu[kind][-1]:.2f} s")
    return cpu


def report(cpu: dict[str, list[float]], args: argparse.Namespace, when: str) -> str:
    spreads = {kind: spread_of(values) for kind, values in cpu.items()}
    rows = [
        f"| {LABELS[k]} | {s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f}) | "
        f"{', '.join(f'{v:.2f}' for v in s['all'])} |"
        for k, s in spreads.items()
    ]
    gap = statistics.median(cpu["null-asyncio"]) - statistics.median(cpu["null-sync"])
    return "\n".join([
        "# The leader-move load's own CPU (no client)",
        "",
        f"{when}; `python benchmarks/load_floor.py --runs {args.runs} --rate {args.rate:g} "
        f"--duration {args.duration:g} --warmup {args.warmup:g} --size {args.size}`; Python "
        f"{sys.version.split()[0]}; measured CPU from the end of the warm-up to the exit "
        f"({args.rate * args.duration:,.0f} records), median (min-max):",
        "",
        "| load | measured CPU s | runs |",
        "|---|---|---|",
        *rows,
        "",
        f"The asyncio load costs {gap:.2f} s more than the sync one.",
        "",
    ])  # fmt: skip


def plot(cpu: dict[str, list[float]], title: str) -> str:
    if not can_plot():
        return NO_PLOT
    cells = {kind: [spread_of(values)] for kind, values in cpu.items()}
    path = save_bars(
        ROOT / "docs" / "img" / "load_floor.png",
        title,
        [("measured CPU s", ["the load alone"], cells, 1.0, "%.2f")],
        colors=COLORS,
        labels=LABELS,
        figsize=(5.5, 4.5),
    )
    return f"plot: {path}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--duration", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=5)
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()
    compile_bytecode(ROOT)
    cpu = anyio.run(run, args)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = report(cpu, args, when)
    out = ROOT / "benchmarks" / "results" / "load_floor.md"
    out.write_text(text)
    say(text)
    say(f"written: {out}")
    say(plot(cpu, f"The leader-move load alone, {args.rate:g} records/s"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
