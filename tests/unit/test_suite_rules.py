"""The suite's own rules (tests/conftest.py) catch what they promise to catch."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

LEAKY = '''
import asyncio

async def main() -> None:
    async def boom() -> None:
        raise RuntimeError("nobody looks at me")

    asyncio.get_running_loop().create_task(boom())
    await asyncio.sleep(0.01)  # it fails; nobody retrieves its exception

def test_leaves_an_unretrieved_task_exception() -> None:
    asyncio.run(main())

def test_clean() -> None:
    asyncio.run(asyncio.sleep(0))
'''


def test_an_unretrieved_task_exception_fails_the_test(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST.read_text().replace('pytest_plugins = ["pytester"]', ""))
    pytester.makepyfile(test_leaky=LEAKY)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*unretrieved asyncio exception(s) in *Task exception was never retrieved*"])
