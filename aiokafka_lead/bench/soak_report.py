"""The soak's checks and report (``benchmarks/soak.py``): every record of a topic read back,
per partition lost / duplicated / reordered records, the copy exactly once, percentiles per
window, resource growth after the warm-up, the plots."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiokafka_lead import AIOKafkaConsumer
from aiokafka_lead.bench.soak_load import PARTITIONS, Ledger, decode
from aiokafka_lead.bench.stats import percentile
from aiokafka_lead.structs import TopicPartition

#: latency and loop-lag windows of a long run (seconds); a short run's are 30 s
WINDOW_S = 300.0


# ------------------------------------------------------------------------------ the checks
async def read_all(bootstrap: str, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """Every committed record of ``topic``: partition -> [(offset, value)]."""
    out: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", auto_offset_reset="earliest"
    )
    async with consumer:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)

        async def behind() -> bool:
            return any([await consumer.position(tp) < ends[tp] for tp in tps])

        while await behind():
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                out[tp.partition].extend((r.offset, r.value) for r in records if r.value is not None)
    return out


def check_data(ledger: Ledger, log: dict[int, list[tuple[int, bytes]]]) -> dict[str, int]:
    lost = duplicated = reordered = 0
    for partition in range(PARTITIONS):
        seen: Counter[int] = Counter()
        last = -1
        for _, value in log.get(partition, []):
            p, seq = decode(value)
            assert p == partition, (p, partition)
            seen[seq] += 1
            reordered += seq < last
            last = max(last, seq)
        duplicated += sum(n - 1 for n in seen.values() if n > 1)
        lost += sum(1 for seq in ledger.acked[partition] if seq not in seen)
    return {"lost": lost, "duplicated": duplicated, "reordered": reordered}


def check_copy(
    data: dict[int, list[tuple[int, bytes]]],
    copy: dict[int, list[tuple[int, bytes]]],
    copied_to: dict[int, int],
) -> dict[str, Any]:
    """Every source record below the copy's committed position exactly once in the copy;
    the first duplicates found, each with its offsets in the source and in the copy."""
    missing = duplicated = extra = 0
    examples: list[dict[str, Any]] = []
    for partition in range(PARTITIONS):
        source_offset = {v: o for o, v in data.get(partition, [])}
        wanted = Counter(v for o, v in data.get(partition, []) if o < copied_to.get(partition, 0))
        got = Counter(v for _, v in copy.get(partition, []))
        missing += sum(1 for v in wanted if v not in got)
        twice = {v for v, n in got.items() if n > 1}
        duplicated += sum(got[v] - 1 for v in twice)
        extra += sum(1 for v in got if v not in wanted)
        for value in sorted(twice, key=lambda v: source_offset.get(v, -1))[:5]:
            examples.append(
                {
                    "partition": partition,
                    "source_offset": source_offset.get(value),
                    "copy_offsets": [o for o, v in copy.get(partition, []) if v == value],
                }
            )
    return {
        "copy_missing": missing,
        "copy_duplicated": duplicated,
        "copy_not_in_source": extra,
        "copy_duplicate_examples": examples[:20],
    }


def windows(points: Iterable[tuple[float, float]], width: float) -> list[dict[str, float]]:
    out = []
    by: dict[int, list[float]] = defaultdict(list)
    for t, v in points:
        by[int(t // width)].append(v)
    for w in sorted(by):
        values = sorted(by[w])
        out.append(
            {
                "window_start_s": w * width,
                "count": len(values),
                "p50": round(percentile(values, 50), 2),
                "p99": round(percentile(values, 99), 2),
                "p99.9": round(percentile(values, 99.9), 2),
            }
        )
    return out


def growth(samples: list[dict[str, Any]], settle_s: float) -> dict[str, float | None]:
    """Percent change of RSS (the whole process's, and less the ledger's records:
    ``client_rss_mib``), descriptors, tasks and connections from the first sample after
    ``settle_s`` (the first 10 minutes of a long run) to the last one (the target: under 5%)."""
    later = [s for s in samples if s["t"] >= settle_s]
    if len(later) < 2:
        return {}

    def value(sample: dict[str, Any], key: str) -> float:
        return float(sum(sample[key].values()) if key == "connections" else sample[key])

    out: dict[str, float | None] = {}
    for key in ("rss_mib", "client_rss_mib", "fds", "tasks", "connections"):
        first, last = value(later[0], key), value(later[-1], key)
        out[key] = round((last - first) / first * 100, 1) if first else None
    return out


def build_report(
    settings: Any, ledger: Ledger, *, data: Any, copy: Any, copied_to: dict[int, int], seconds: float
) -> dict[str, Any]:
    lag = sorted(v for _, v in ledger.loop_lag_ms)
    width = 30.0 if settings.short else WINDOW_S
    report: dict[str, Any] = {
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(settings).items()},
        "seconds": round(seconds, 1),
        "load_avg": os.getloadavg(),
        "acknowledged": sum(len(v) for v in ledger.acked.values()),
        "failed_by_error": dict(ledger.failed),
        **check_data(ledger, data),
        "copied": sum(copied_to.values()),
        **check_copy(data, copy, copied_to),
        "copy_aborts": dict(ledger.aborted),
        "share_group_records": ledger.shared,
        "faults": [{"start_s": round(a, 1), "end_s": round(b, 1), "what": w} for a, b, w in ledger.faults],
        "errors_by_type": dict(Counter(e.split(":")[0] for _, _, e in ledger.errors)),
        "errors": [{"t": round(t, 1), "where": w, "error": e} for t, w, e in ledger.errors[:200]],
        "produce_ms": windows(ledger.produce_ms, width),
        "end_to_end_ms": windows(ledger.e2e_ms, width),
        "loop_lag_ms_p99.9": round(percentile(lag, 99.9), 1) if lag else None,
        "loop_lag_ms": windows(ledger.loop_lag_ms, width),
        "growth_after_warm_up": growth(ledger.samples, settle_s=60.0 if settings.short else 600.0),
        "samples": ledger.samples,
    }
    return report


def plot(report: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = report["samples"]
    ts = [s["t"] / 60 for s in samples]
    fig, axes = plt.subplots(4, 1, figsize=(11, 11), sharex=True)
    axes[0].plot(ts, [s["rss_mib"] for s in samples], label="process")
    axes[0].plot(ts, [s["client_rss_mib"] for s in samples], label="less the ledger's records")
    axes[0].set_ylabel("RSS MiB")
    axes[0].legend()
    for key, ax in zip(("fds", "tasks"), axes[1:3], strict=True):
        ax.plot(ts, [s[key] for s in samples])
        ax.set_ylabel(key)
    for series, label in (("produce_ms", "produce p99"), ("end_to_end_ms", "end-to-end p99")):
        rows = report[series]
        axes[3].plot(
            [r["window_start_s"] / 60 for r in rows], [r["p99"] for r in rows], marker="o", label=label
        )
    axes[3].set_ylabel("ms")
    axes[3].legend()
    for ax in axes:
        for fault in report["faults"]:
            ax.axvspan(fault["start_s"] / 60, fault["end_s"] / 60, color="red", alpha=0.1)
    axes[3].set_xlabel("minutes (faults shaded)")
    fig.suptitle(f"soak: {report['seconds'] / 60:.0f} min, load average {report['load_avg'][0]:.1f}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path
