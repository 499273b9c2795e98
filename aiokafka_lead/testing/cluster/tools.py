"""Running Kafka's own command-line tools (TopicCommand, MetadataQuorumCommand, ...).

Tools are plain main classes in the provisioned jars, so they run the same way against
a cluster we started and against an external one: only the jars and a JVM are needed.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from . import config, jars, node
from .node import ClusterError

TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
METADATA_QUORUM_COMMAND = "org.apache.kafka.tools.MetadataQuorumCommand"
LEADER_ELECTION_COMMAND = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN_PARTITIONS_COMMAND = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
STORAGE_TOOL = "kafka.tools.StorageTool"


def _tool_logging_flag(kafka_version: str) -> str:
    """Write (once, atomically) a logging config that keeps tool stdout clean. The
    temp name is unique per thread: the nodes of a cluster are formatted in parallel."""
    name, text, flag = config.tool_logging_config(kafka_version)
    path = jars.libs_dir(kafka_version).parent / name
    if not path.exists() or path.read_text() != text:
        tmp = path.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return flag.format(path=path)


def run_java_main(
    kafka_version: str,
    main_class: str,
    args: list[str],
    *,
    timeout: float,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``main_class`` with the jars of ``kafka_version`` in a small, quick JVM."""
    libs = jars.provision(kafka_version, quiet=True)
    cmd = [
        node.java_executable(),
        *config.TOOL_JVM_FLAGS,
        _tool_logging_flag(kafka_version),
        "-cp",
        node.classpath(libs),
        main_class,
        *args,
    ]
    try:
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ClusterError(f"{main_class} did not finish within {timeout:.0f}s") from exc


def run_tool(
    kafka_version: str,
    main_class: str,
    *args: str,
    timeout: float = 120.0,
    check: bool = True,
) -> str:
    """Run a Kafka tool and return its stdout; with ``check`` a non-zero exit raises
    ``ClusterError`` carrying the tool's output."""
    proc = run_java_main(kafka_version, main_class, list(args), timeout=timeout)
    if check and proc.returncode != 0:
        raise ClusterError(
            f"{main_class} {' '.join(args)} exited {proc.returncode}:\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        )
    return proc.stdout


def format_storage(
    kafka_version: str, cluster_id: str, configs: Mapping[int, Path], extra: list[str]
) -> None:
    """``StorageTool format`` for every node at once (each is a short JVM run); ``extra``
    carries e.g. the ``--add-scram`` credentials to put into the bootstrap metadata."""
    started = time.monotonic()
    jars.progress(f"formatting storage of {len(configs)} node(s)")
    results: dict[int, subprocess.CompletedProcess[str]] = {}

    def fmt(nid: int) -> None:
        args = ["format", "--ignore-formatted", "-t", cluster_id, "-c", str(configs[nid])]
        results[nid] = run_java_main(kafka_version, STORAGE_TOOL, [*args, *extra], timeout=120)

    threads = [threading.Thread(target=fmt, args=(nid,)) for nid in configs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for nid in configs:
        proc = results.get(nid)
        if proc is None or proc.returncode != 0:
            detail = f"{proc.stdout}\n{proc.stderr}" if proc else "no result"
            raise ClusterError(f"formatting node {nid} failed:\n{detail[-4000:]}")
    jars.progress("storage formatted", started)
