"""The leader-move comparison's pooled tails: every acknowledged record of every run, and of
the runs without a stall, per client."""

from __future__ import annotations

from aiokafka_lead.bench.stats import STALL_MS, Samples, percentile, record_tails


def run(client: str, latencies: list[float | None]) -> Samples:
    return Samples(client, [float(i) for i in range(len(latencies))], latencies)


def test_the_tails_pool_every_record_and_set_stalled_runs_apart() -> None:
    calm: list[float | None] = [float(v) for v in range(1000)]  # 0..999 ms
    stalled: list[float | None] = [float(v) for v in range(1000, 1999)] + [None]  # None: unacknowledged
    tails = {t.client: t for t in record_tails([run("a", calm), run("b", calm), run("a", stalled)])}
    a, b = tails["a"], tails["b"]
    assert (a.runs, b.runs) == (2, 1)
    # "a" pooled: 0..1998 ms, 1,999 records; nearest rank: the 1,980th and the 1,998th
    assert (a.p99_ms, a.p999_ms) == (1979.0, 1997.0)
    assert a.stalled_runs == 1  # its second run: records of 1,000 ms (STALL_MS) and more
    assert (a.calm_p99_ms, a.calm_p999_ms) == (989.0, 998.0)  # its first run alone
    assert (b.p99_ms, b.p999_ms, b.stalled_runs) == (989.0, 998.0, 0)


def test_a_client_whose_every_run_stalled_has_no_calm_tail() -> None:
    (t,) = record_tails([run("a", [5.0, STALL_MS]), run("a", [STALL_MS + 1])])
    assert t.stalled_runs == 2
    assert t.calm_p99_ms != t.calm_p99_ms  # nan: nothing left to pool
    assert t.p999_ms == STALL_MS + 1


def test_the_nearest_rank_is_exact_where_floating_point_is_not() -> None:
    values = [float(v) for v in range(1, 1001)]
    assert percentile(values, 99.9) == 999.0  # 99.9 / 100 * 1000 rounds up past 999 unrounded
    assert percentile(values, 99) == 990.0
    assert percentile(values, 50) == 500.0
