"""A script (an example) run in its own process for a test: its output (stdout and stderr)
read as it comes, then a SIGTERM and the rest of the output; killed if the test ends first.
The caller bounds each wait (``anyio.fail_after``)."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream


class Script:
    def __init__(self, process: Process) -> None:
        self.process = process
        self.output = ""
        assert process.stdout is not None
        self._stream = TextReceiveStream(process.stdout)

    async def until(self, done: Callable[[str], bool]) -> None:
        """Read the output until ``done(output so far)``; the script ending first fails."""
        async for chunk in self._stream:
            self.output += chunk
            if done(self.output):
                return
        raise AssertionError(f"the script ended before its output had what was awaited:\n{self.output}")

    async def terminate(self) -> int:
        """SIGTERM, then the rest of its output; its exit code."""
        self.process.send_signal(signal.SIGTERM)
        async for chunk in self._stream:
            self.output += chunk
        return await self.process.wait()


@asynccontextmanager
async def running(command: Sequence[str], env: Mapping[str, str]) -> AsyncIterator[Script]:
    async with await anyio.open_process(command, env=env, stderr=subprocess.STDOUT) as process:
        try:
            yield Script(process)
        finally:
            if process.returncode is None:
                process.kill()
