"""Provision the official Apache Kafka jars from Maven Central into a per-user cache.

There is no Docker and no Kafka tarball on the machines this runs on, but ``mvn`` and
Maven Central are available, so the broker is assembled from its published artifacts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

DEFAULT_KAFKA_VERSION = "4.4.0"
#: the versions the test suite runs against: the default (everything), then the
#: compatibility subset's (tests/integration/test_compat.py)
TESTED_KAFKA_VERSIONS = (DEFAULT_KAFKA_VERSION, "4.1.1", "3.9.2")
DEPENDENCY_PLUGIN_VERSION = "3.8.1"

# log4j2 version each Kafka line is built against; without the slf4j binding the broker
# logs nothing. 3.x used reload4j (log4j 1) which is already a runtime dependency.
_LOG4J2_VERSIONS = {"4.0": "2.24.1", "4.1": "2.24.3", "4.4": "2.25.5"}
_DEFAULT_LOG4J2 = "2.24.3"


def uses_log4j2(version: str) -> bool:
    """Kafka 4.0 switched the broker from log4j 1 (reload4j) to log4j2."""
    return _major(version) >= 4


def _major(version: str) -> int:
    return int(version.split(".", 1)[0])


def cache_root() -> Path:
    """``${AIOKAFKA_LEAD_CACHE:-${XDG_CACHE_HOME:-~/.cache}}/aiokafka_lead``."""
    explicit = os.environ.get("AIOKAFKA_LEAD_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "aiokafka_lead"


def libs_dir(version: str = DEFAULT_KAFKA_VERSION) -> Path:
    """Where the jars of one Kafka version live once provisioned."""
    return cache_root() / f"kafka-{version}" / "libs"


def is_provisioned(version: str = DEFAULT_KAFKA_VERSION) -> bool:
    """The libs dir only appears by an atomic rename, so existence means complete."""
    libs = libs_dir(version)
    return libs.is_dir() and any(libs.glob("kafka_2.13-*.jar"))


def progress(message: str, started: float | None = None) -> None:
    """Progress on stderr, so stdout stays machine-readable for the CLI contract."""
    suffix = f" ({time.monotonic() - started:.1f}s)" if started is not None else ""
    print(f"[kafka-cluster] {message}{suffix}", file=sys.stderr, flush=True)


def _pom(version: str) -> str:
    log4j2 = _LOG4J2_VERSIONS.get(".".join(version.split(".")[:2]), _DEFAULT_LOG4J2)
    deps = [
        _dependency("org.apache.kafka", "kafka_2.13", version),
        _dependency(
            "org.apache.kafka",
            "kafka-tools",
            version,
            exclusions=[("org.apache.kafka", "connect-runtime")],
        ),
    ]
    if uses_log4j2(version):
        deps.append(_dependency("org.apache.logging.log4j", "log4j-slf4j-impl", log4j2))
    return _project(deps)


def _project(deps: list[str]) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>aiokafka-lead.testing</groupId>
  <artifactId>kafka-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{"".join(deps)}  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>{DEPENDENCY_PLUGIN_VERSION}</version>
      </plugin>
    </plugins>
  </build>
</project>
"""


def _dependency(
    group: str, artifact: str, version: str, exclusions: list[tuple[str, str]] | None = None
) -> str:
    excl = ""
    if exclusions:
        items = "".join(
            f"        <exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>\n"
            for g, a in exclusions
        )
        excl = f"      <exclusions>\n{items}      </exclusions>\n"
    return (
        "    <dependency>\n"
        f"      <groupId>{group}</groupId>\n"
        f"      <artifactId>{artifact}</artifactId>\n"
        f"      <version>{version}</version>\n"
        f"{excl}"
        "    </dependency>\n"
    )


def provision(version: str = DEFAULT_KAFKA_VERSION, *, quiet: bool = False) -> Path:
    """Return the libs dir for ``version``, downloading it first if needed."""
    target = libs_dir(version)
    if is_provisioned(version):
        if not quiet:
            progress(f"Kafka {version} jars already cached in {target}")
        return target
    _download(_pom(version), target, f"Kafka {version}", must_have="kafka_2.13-")
    if not quiet:
        count, size = cache_stats(version)
        progress(f"cached {count} jars ({size / 1e6:.1f} MB) in {target}")
    return target


def maven_artifact(group: str, artifact: str, version: str) -> Path:
    """A directory with the jar of ``group:artifact:version`` and its runtime dependencies,
    fetched from Maven Central once into the per-user cache."""
    target = cache_root() / "maven" / f"{group}_{artifact}-{version}"
    if target.is_dir() and any(target.glob(f"{artifact}-{version}.jar")):
        return target
    _download(_project([_dependency(group, artifact, version)]), target, f"{artifact} {version}",
              must_have=f"{artifact}-{version}")  # fmt: skip
    return target


def _download(pom: str, target: Path, what: str, *, must_have: str) -> None:
    """mvn copies the dependencies of ``pom`` into a temp dir next to the cache, renamed into
    place only when it succeeded, so an interrupted download never leaves a half cache."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError(f"mvn is not on PATH: it is needed to fetch the {what} jars")
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_downloads(target.parent)
    started = time.monotonic()
    progress(f"downloading the {what} jars from Maven Central with mvn ...")
    with tempfile.TemporaryDirectory(prefix=".provision-", dir=target.parent) as tmp:
        work = Path(tmp)
        (work / "pom.xml").write_text(pom)
        staged = work / "libs"
        cmd = [
            mvn,
            "-q",
            "-B",
            "-f",
            str(work / "pom.xml"),
            f"org.apache.maven.plugins:maven-dependency-plugin:{DEPENDENCY_PLUGIN_VERSION}"
            ":copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staged}",
        ]
        proc = subprocess.Popen(
            cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        output = _wait_with_progress(proc, started)
        if proc.returncode != 0:
            raise RuntimeError(
                f"mvn failed (exit {proc.returncode}) fetching {what}:\n{output[-4000:]}"
            )
        jars = sorted(staged.glob("*.jar"))
        if not any(j.name.startswith(must_have) for j in jars):
            raise RuntimeError(f"mvn succeeded but no {must_have} jar in {staged}")
        try:
            staged.rename(target)
        except OSError:
            # Another process finished first: its copy is as good as ours.
            if not any(target.glob(f"{must_have}*.jar")):
                raise
    progress(f"{what} jars in {target}", started)


def _remove_stale_downloads(parent: Path, max_age: float = 3600.0) -> None:
    """Drop temp dirs of downloads that were killed (old enough not to be running)."""
    for stale in parent.glob(".provision-*"):
        try:
            if time.time() - stale.stat().st_mtime > max_age:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            continue


def _wait_with_progress(proc: subprocess.Popen[str], started: float) -> str:
    """Collect mvn output while printing a heartbeat, so long downloads look alive."""
    chunks: list[str] = []
    assert proc.stdout is not None
    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            chunks.append(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    while True:
        try:
            proc.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            progress("still downloading", started)
    reader.join(timeout=5)
    return "".join(chunks)


def cache_stats(version: str = DEFAULT_KAFKA_VERSION) -> tuple[int, int]:
    """(jar count, total bytes) of a provisioned version."""
    jars = list(libs_dir(version).glob("*.jar"))
    return len(jars), sum(j.stat().st_size for j in jars)


def clients_jar(version: str = DEFAULT_KAFKA_VERSION) -> Path:
    """The kafka-clients jar of ``version`` (provisioned if needed).

    It carries Kafka's message specs (``common/message/*.json``) that
    ``tools/gen_protocol.py`` generates the codec from and checks it against.
    """
    jar = provision(version, quiet=True) / f"kafka-clients-{version}.jar"
    if not jar.is_file():
        raise RuntimeError(f"no kafka-clients jar in {jar.parent}: remove it to provision again")
    return jar
