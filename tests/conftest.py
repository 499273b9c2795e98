"""Suite-wide rules.

An exception nobody retrieved fails the test (or, in a reference cycle, the module) that left
it behind: asyncio reports "Task exception was never retrieved" / "Future exception was never
retrieved" (and tasks destroyed while pending) through its loop exception handler, which logs
on the "asyncio" logger when the object is garbage collected. Unraisable exceptions (``__del__``, callbacks)
are already errors through ``filterwarnings`` in pyproject.toml.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest

from aiokafka_lead.testing.pytest_plugin import CLUSTER_ENV, docker_mode

pytest_plugins = ["pytester"]  # tests/unit/test_suite_rules.py runs a suite inside the suite

UNRETRIEVED = (
    "exception was never retrieved",
    "Task was destroyed but it is pending",
)


class _Unretrieved(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if any(marker in message for marker in UNRETRIEVED):
            self.messages.append(message)


_HANDLER = _Unretrieved()


#: the project's integration tests that need the jar harness's SSL/SASL listeners; the Docker
#: cluster (AIOKAFKA_LEAD_CLUSTER=docker) serves PLAINTEXT only, so they skip in that mode
SECURITY_MARKER = "security_listeners"
_SECURITY_SKIP = (
    "needs the SSL/SASL listeners of the jar harness's cluster; "
    f"the Docker cluster ({CLUSTER_ENV}=docker) serves PLAINTEXT only"
)


def pytest_configure(config: pytest.Config) -> None:
    logging.getLogger("asyncio").addHandler(_HANDLER)
    config.addinivalue_line(
        "markers",
        f"{SECURITY_MARKER}: needs the cluster's SSL/SASL listeners (skipped with {CLUSTER_ENV}=docker)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not docker_mode():
        return
    skip = pytest.mark.skip(reason=_SECURITY_SKIP)
    for item in items:
        if item.get_closest_marker(SECURITY_MARKER) is not None:
            item.add_marker(skip)


def _fail_if_reported(where: str) -> None:
    messages, _HANDLER.messages = _HANDLER.messages, []
    if messages:
        pytest.fail(f"unretrieved asyncio exception(s) in {where}: " + " | ".join(messages), pytrace=False)


@pytest.fixture(autouse=True)
def no_unretrieved_exceptions() -> Iterator[None]:
    """What was reported while the test ran (objects freed at once by reference counting)."""
    yield
    _fail_if_reported("this test")


@pytest.fixture(autouse=True, scope="module")
def no_unretrieved_exceptions_in_cycles() -> Iterator[None]:
    """Objects in reference cycles report only when collected: once per module (a full
    collection per test would triple the suite's time)."""
    yield
    gc.collect()
    _fail_if_reported("this module (found by the garbage collector after its last test)")
