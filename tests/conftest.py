"""Suite-wide rules.

An exception nobody retrieved fails the test that left it behind: asyncio reports
"Task exception was never retrieved" / "Future exception was never retrieved" (and tasks
destroyed while pending) through its loop exception handler, which logs on the "asyncio"
logger when the object is garbage collected. Unraisable exceptions (``__del__``, callbacks)
are already errors through ``filterwarnings`` in pyproject.toml.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest

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


@pytest.fixture(autouse=True)
def no_unretrieved_exceptions() -> Iterator[None]:
    """Torn down last (a root autouse fixture), after the test's event loop has closed."""
    handler = _Unretrieved()
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    try:
        yield
        gc.collect()  # futures report an unretrieved exception when they are collected
    finally:
        logger.removeHandler(handler)
    if handler.messages:
        pytest.fail("unretrieved asyncio exception(s): " + " | ".join(handler.messages), pytrace=False)
