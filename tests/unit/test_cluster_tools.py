"""The harness's tool logging config is written safely by parallel tool runs (the nodes of
a cluster are formatted in parallel threads)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from aiokafka_lead.testing.cluster import jars, tools


def test_parallel_first_writes_of_the_tool_logging_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIOKAFKA_LEAD_CACHE", str(tmp_path))
    jars.libs_dir("9.9.9").parent.mkdir(parents=True)
    threads = 4
    # every thread has written its temp file before any renames it into place: the
    # interleaving in which a shared temp name loses the race
    barrier = threading.Barrier(threads)
    real_replace = Path.replace

    def replace_after_all_wrote(self: Path, target: str | Path) -> Path:
        barrier.wait(timeout=10)
        return real_replace(self, target)

    monkeypatch.setattr(Path, "replace", replace_after_all_wrote)
    flags: list[str] = []
    failures: list[BaseException] = []

    def run() -> None:
        try:
            flags.append(tools._tool_logging_flag("9.9.9"))
        except BaseException as exc:
            failures.append(exc)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=20)
    assert failures == [] and len(set(flags)) == 1
    written = sorted(p.name for p in jars.libs_dir("9.9.9").parent.iterdir())
    assert written == ["tools-log4j2.properties"]  # no temp file left behind
