"""The soak's short run (``benchmarks/soak.py --short``): a 3-broker cluster with a PLAINTEXT
and a SASL/OAUTHBEARER listener, idempotent producers, a transactional copy, a classic, a
KIP-848 and a share group, and every fault of the schedule once (every leader moved, a
broker SIGKILLed and restarted, members joining and leaving, the token endpoint down, a
broker cut off from the clients through Toxiproxy, a rolling restart).
Nothing acknowledged is lost, nothing is written twice or out of order, and the copy holds
every source record exactly once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.security_listeners]

SOAK = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"


def test_the_soaks_short_run_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    run = subprocess.run(
        [sys.executable, str(SOAK), "--short", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    report = json.loads(out.read_text())
    faults = [f["what"] for f in report["faults"]]
    assert len(faults) == 6, faults
    assert report["acknowledged"] > 1000, report["acknowledged"]
    assert (report["lost"], report["duplicated"], report["reordered"]) == (0, 0, 0), report
    assert report["copied"] == report["acknowledged"], (report["copied"], report["acknowledged"])
    copy_check = (report["copy_missing"], report["copy_duplicated"], report["copy_not_in_source"])
    assert copy_check == (0, 0, 0), (copy_check, report["copy_duplicate_examples"], report["errors"])
    assert report["share_group_records"] > 0
