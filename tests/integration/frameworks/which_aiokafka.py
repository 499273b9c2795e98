"""A pytest plugin for a suite run in a subprocess: at the end of the run it names the
module ``import aiokafka`` gave (its name and file), so the caller knows which client the
suite really ran on."""

from __future__ import annotations

import sys

import pytest

MARKER = "aiokafka in use:"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    module = sys.modules.get("aiokafka")
    name = getattr(module, "__name__", None)
    path = getattr(module, "__file__", None)
    terminalreporter.write_line(f"{MARKER} {name} {path}")
