"""taskiq-aio-kafka's own test suite, unchanged, on aiokafka_lead behind the opt-in alias.

The suite comes from the project's source distribution on PyPI (downloaded into the
per-user cache on first use). It runs twice against the same cluster, each time in its own
pytest process: on the installed aiokafka, then with ``-p aiokafka_lead.testing.aiokafka_alias``,
where ``import aiokafka`` gives aiokafka_lead. The same tests must pass in both runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from tests.integration.frameworks.which_aiokafka import MARKER
from tests.support.sdist import unpacked_sdist

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "taskiq-aio-kafka"
#: the newest release; the ``dev`` extra installs the same version (and its dependencies)
VERSION = "1.0.0"
SUITE_TIMEOUT = 240.0


@dataclass(frozen=True)
class SuiteRun:
    outcomes: dict[str, str]  # test id -> passed / failed / error / skipped
    module: str  # what ``import aiokafka`` gave in the run: its name and file
    output: str

    @property
    def passed(self) -> set[str]:
        return {test for test, outcome in self.outcomes.items() if outcome == "passed"}


def junit_outcomes(report: Path) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = outcome
    return outcomes


def run_suite(source: Path, bootstrap: str, workdir: Path, *, alias: bool) -> SuiteRun:
    report = workdir / ("aiokafka_lead.xml" if alias else "aiokafka.xml")
    plugins = ["-p", "aiokafka_lead.testing.aiokafka_alias"] if alias else []
    plugins += ["-p", "tests.integration.frameworks.which_aiokafka", "-p", "no:cacheprovider"]
    command = [sys.executable, "-m", "pytest", *plugins, "-p", "no:randomly", "-q"]
    command += [f"--junitxml={report}", "tests"]
    # the suite's own directory is the current one (its pytest settings, its package source);
    # this checkout's aiokafka_lead and test plugins come next on the path
    env = {**os.environ, "TEST_KAFKA_URL": bootstrap}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        command, cwd=source, env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT, check=False
    )
    output = done.stdout + done.stderr
    # 0: every test passed, 1: some failed; anything else is a run that went wrong
    assert done.returncode in (0, 1), f"{' '.join(command)} exited {done.returncode}:\n{output[-6000:]}"
    used = re.search(rf"^{re.escape(MARKER)} (.*)$", done.stdout, re.MULTILINE)
    assert used is not None, output[-6000:]
    return SuiteRun(junit_outcomes(report), used.group(1), output)


def test_taskiq_suite_passes_the_same_tests_on_aiokafka_lead(kafka_cluster: Any, tmp_path: Path) -> None:
    assert version(PROJECT) == VERSION, f"install the dev extra: {PROJECT}=={VERSION} runs its own suite"
    source = unpacked_sdist(PROJECT, VERSION)
    assert (source / "tests" / "conftest.py").is_file(), f"{source}: the sdist carries no tests/"
    bootstrap = kafka_cluster.bootstrap()

    theirs = run_suite(source, bootstrap, tmp_path, alias=False)
    ours = run_suite(source, bootstrap, tmp_path, alias=True)

    assert theirs.module.startswith("aiokafka "), theirs.module
    assert ours.module == f"aiokafka_lead {ROOT / 'aiokafka_lead' / '__init__.py'}", ours.module
    assert theirs.passed, f"no test passed on aiokafka:\n{theirs.output[-6000:]}"
    assert ours.outcomes.keys() == theirs.outcomes.keys()
    differ = {t: (theirs.outcomes[t], ours.outcomes[t]) for t in theirs.outcomes if t in ours.outcomes}
    differ = {t: pair for t, pair in differ.items() if pair[0] != pair[1]}
    assert not differ, f"outcomes (aiokafka, aiokafka_lead) differ: {differ}\n{ours.output[-6000:]}"
