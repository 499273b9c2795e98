"""A third-party package's source distribution from PyPI, unpacked into the per-user cache.

Some tests run another project's own test suite, which only its source distribution
carries. :func:`unpacked_sdist` downloads it with pip the first time (``pip download
--no-deps --no-binary :all:``), unpacks it and renames it into place, so the directory
exists only when complete; later calls reuse it. A failed download raises, saying why: a
test that needs the suite fails rather than skips.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from aiokafka_lead.testing.cluster.jars import cache_root

DOWNLOAD_TIMEOUT = 300.0


class SdistUnavailable(RuntimeError):
    """The source distribution could not be downloaded or unpacked."""


def sdist_dir() -> Path:
    """Where unpacked source distributions live (``<cache root>/sdists``)."""
    return cache_root() / "sdists"


def unpacked_sdist(project: str, version: str) -> Path:
    """The unpacked source tree of ``project==version`` (its top directory)."""
    base = sdist_dir()
    target = base / f"{_normalized(project)}-{version}"
    if target.is_dir():
        return target
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix=".staging-") as staging:
        archive = _download(project, version, Path(staging) / "download")
        unpacked = Path(staging) / "unpacked"
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, filter="data")
        tops = [p for p in unpacked.iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise SdistUnavailable(f"{archive.name}: expected one top directory, found {tops}")
        try:
            tops[0].rename(target)
        except OSError:
            if not target.is_dir():  # not a concurrent run that put it there first
                raise
    return target


def _download(project: str, version: str, into: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    command += ["--disable-pip-version-check", "-d", str(into), f"{project}=={version}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        raise SdistUnavailable(
            f"pip download {project}=={version}: no answer in {DOWNLOAD_TIMEOUT} s"
        ) from exc
    archives = sorted(into.glob("*.tar.gz")) if into.is_dir() else []
    if done.returncode != 0 or len(archives) != 1:
        raise SdistUnavailable(
            f"pip download {project}=={version} failed (exit {done.returncode}, archives {archives}):\n"
            f"{done.stdout}\n{done.stderr}"
        )
    return archives[0]


def _normalized(project: str) -> str:
    return project.lower().replace("-", "_").replace(".", "_")
