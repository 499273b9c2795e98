"""The leader-move load with no client behind it (benchmarks/load_floor.py): each null client
runs the whole schedule, every record acknowledged, its CPU measured from GO to the exit."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from aiokafka_lead.bench.children import children_cpu_s, process_cpu_s

ROOT = Path(__file__).resolve().parents[3]
CLIENT = ROOT / "benchmarks" / "leader_move_client.py"


@pytest.mark.parametrize("kind", ["null-asyncio", "null-sync"])
def test_a_null_client_runs_the_whole_schedule_and_acknowledges_every_record(
    kind: str, tmp_path: Path
) -> None:
    out = tmp_path / "samples.json"
    cmd = [sys.executable, str(CLIENT), "--client", kind, "--label", kind, "--bootstrap-server", "none",
           "--topic", "none", "--rate", "500", "--duration", "0.4", "--warmup", "0.1",
           "--out", str(out)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("GO ")
    samples = json.loads(out.read_text())
    assert len(samples["latency_ms"]) == 200  # 0.4 s at 500/s
    assert all(latency is not None and latency >= 0 for latency in samples["latency_ms"])


def test_the_cpu_of_a_running_child_and_of_the_children_waited_for() -> None:
    before = children_cpu_s()
    with subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nend = time.process_time() + 0.3\n"
         "while time.process_time() < end: pass\nprint('spun', flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline() == "spun\n"
        running = process_cpu_s(proc.pid)
        proc.stdin.close()
    assert running >= 0.29  # its own CPU so far, read while it runs
    assert children_cpu_s() - before >= running
    assert math.isnan(process_cpu_s(proc.pid))  # reaped: no /proc entry left
