"""Process control for JVMs this package started, and nothing else.

Every JVM we spawn carries a unique marker system property on its command line; a pid
is only ever signalled after ``/proc/<pid>/cmdline`` shows that marker, so a recycled
pid or someone else's Kafka can never be hit.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

MARKER_PROPERTY = "aiokafka_lead.cluster.node"


class ClusterError(RuntimeError):
    """A cluster operation failed; the message says which node and why."""


def java_executable() -> str:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` from PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise ClusterError("java is not on PATH (a JDK 17+ is needed to run Kafka)")
    return found


def classpath(libs: Path) -> str:
    """The JVM expands ``dir/*`` itself, so no shell is ever involved."""
    return f"{libs}/*"


def new_marker(directory: Path, node_id: int) -> str:
    """A per-start token, unique across runs, recorded in the state file."""
    return f"{directory.resolve()}#{node_id}#{uuid.uuid4().hex}"


def marker_flag(marker: str) -> str:
    return f"-D{MARKER_PROPERTY}={marker}"


def read_cmdline(pid: int) -> list[str] | None:
    """Arguments of a live process; None if gone. Zombies have an empty cmdline."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    if not raw:
        return None
    return raw.rstrip(b"\0").decode(errors="replace").split("\0")


def is_ours(pid: int | None, marker: str | None) -> bool:
    """True if ``pid`` is alive and is the JVM started with ``marker``."""
    if pid is None or marker is None:
        return False
    _reap(pid)
    args = read_cmdline(pid)
    return args is not None and marker_flag(marker) in args


def _reap(pid: int) -> None:
    """Collect our own exited children so they do not linger as zombies."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child (e.g. started by an earlier CLI run): init reaps it
    except OSError:
        pass


def spawn(cmd: Sequence[str], *, cwd: Path, output: Path) -> int:
    """Start a detached JVM (own session, survives the caller) writing to ``output``."""
    with output.open("ab") as out:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    # The Popen object is dropped on purpose: liveness is tracked through /proc and
    # reaping through waitpid, which also works for processes of an earlier run.
    proc.returncode = 0  # silences "subprocess still running" ResourceWarning at GC
    _wait_for_exec(proc.pid)
    return proc.pid


def _process_state(pid: int) -> str | None:
    """The one-letter state from ``/proc/<pid>/stat`` (``Z`` = zombie), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[0]


def _wait_for_exec(pid: int, timeout: float = 10.0) -> None:
    """Popen returns when exec *began*; the kernel publishes the new argv a moment later,
    and until then ``/proc/<pid>/cmdline`` reads empty, which would look like an exit."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if read_cmdline(pid) or _process_state(pid) in (None, "Z"):
            return
        time.sleep(0.005)


def send_signal(pid: int | None, marker: str | None, sig: signal.Signals) -> bool:
    """Signal the process only after checking it is ours; False if it was not running."""
    if pid is None or not is_ours(pid, marker):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def wait_exit(pid: int | None, marker: str | None, timeout: float) -> bool:
    """Wait until the process is gone; True if it exited before ``timeout``."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while is_ours(pid, marker):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)
    return True


def terminate(pid: int | None, marker: str | None, grace: float) -> bool:
    """SIGTERM, then SIGKILL after ``grace`` seconds. True if the graceful path sufficed."""
    if not send_signal(pid, marker, signal.SIGTERM):
        return True
    if wait_exit(pid, marker, grace):
        return True
    send_signal(pid, marker, signal.SIGKILL)
    wait_exit(pid, marker, 30.0)
    return False


def tail(path: Path, lines: int = 40) -> str:
    """Last lines of a log file (for error messages); empty if it does not exist."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
