"""Plots of leader-move runs: latency over time with move markers, and latency CDFs."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from aiokafka_lead.bench.stats import Samples

PLOT_EXTRA = "pip install 'aiokafka_lead[plot]'"
#: what the demo and the benchmarks print instead of a plot when matplotlib is missing
NO_PLOT = f"plots: not drawn, matplotlib is missing ({PLOT_EXTRA} draws them)"


def can_plot() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


def plot_runs(runs: Sequence[Samples], path: Path, title: str) -> Path:
    """One row per client (latency of every record over time, moves shaded) and a CDF panel."""
    import matplotlib  # the [plot] extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs) + 1, 1, figsize=(11, 2.4 * len(runs) + 3.2), squeeze=False)
    t0 = min((s.scheduled_at[0] for s in runs if s.scheduled_at), default=0.0)
    top = max((v for s in runs for v in s.latency_ms if v is not None), default=1.0)
    for ax, samples, color in zip(axes[:-1, 0], runs, COLORS, strict=False):
        start = samples.scheduled_at[0] if samples.scheduled_at else t0
        pairs = zip(samples.scheduled_at, samples.latency_ms, strict=True)
        xs = [t - start for t, v in pairs if v is not None]
        ys = [v for v in samples.latency_ms if v is not None]
        ax.scatter(xs, ys, s=2, color=color, rasterized=True)
        for move_start, move_end in samples.moves:
            ax.axvspan(
                move_start - start, max(move_end - start, move_start - start + 0.05), color="grey", alpha=0.3
            )
        failed = sum(1 for v in samples.latency_ms if v is None)
        ax.set_yscale("log")
        ax.set_ylim(0.5, top * 1.5)
        ax.set_ylabel("ms from schedule")
        ax.set_title(
            f"{samples.client}: {len(ys)} acked, {failed} failed (grey: leadership of every partition moving)"
        )
    axes[-2, 0].set_xlabel("scheduled time, seconds since the run started")
    cdf = axes[-1, 0]
    for samples, color in zip(runs, COLORS, strict=False):
        values = sorted(v for v in samples.latency_ms if v is not None)
        if not values:
            continue
        n = len(values)
        tail = [1 - (i + 1) / n for i in range(n)]
        cdf.plot(values, [max(t, 1e-6) for t in tail], color=color, label=samples.client)
    cdf.set_xscale("log")
    cdf.set_yscale("log")
    cdf.set_xlabel("latency ms")
    cdf.set_ylabel("fraction slower (1 - CDF)")
    cdf.grid(True, which="both", alpha=0.3)
    cdf.legend()
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
