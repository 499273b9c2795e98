"""Build the project's KRaft broker image (``docker/kafka/Dockerfile``) without a registry.

``apache/kafka`` is the default image of the Docker fixtures and of docker-compose.yml.
Where no registry is reachable, ``python -m aiokafka_lead.testing.kafka_image build``
(``make kafka-image``) builds ``aiokafka-lead/kafka:<version>`` locally, with the same
environment-variable contract, from:

* a Debian base image: ``debian:bookworm-slim`` when it is present or can be pulled,
  otherwise a root filesystem made with ``debootstrap`` from Debian's packages and loaded
  with ``docker import`` (as ``aiokafka-lead/debian:bookworm``, kept for later builds);
* the JRE from Debian's packages (installed by the Dockerfile);
* the Kafka jars the cluster harness already downloads (``jars.provision``), copied into
  the build context at build time; no jar is ever committed.

A build is skipped when an image with the same inputs exists (a content hash of the
Dockerfile, its scripts, the jar names and sizes and the base image is kept as a label).
Select the image with ``KAFKA_IMAGE=aiokafka-lead/kafka:4.4.0``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .cluster import jars
from .docker_engine import DEFAULT_IMAGE, IMAGE_ENV, docker_problem, local_tag

REGISTRY_BASE = "debian:bookworm-slim"
DEBOOTSTRAP_BASE = "aiokafka-lead/debian:bookworm"
DEBIAN_SUITE = "bookworm"
HASH_LABEL = "aiokafka-lead.context-hash"


class ImageBuildError(RuntimeError):
    """The image could not be built; the message says what to do."""


def docker_context_dir() -> Path:
    """``docker/kafka`` of the source tree (the Dockerfile is not part of the wheel)."""
    return Path(__file__).resolve().parents[2] / "docker" / "kafka"


def image_exists(image: str) -> bool:
    proc = subprocess.run(
        ["docker", "image", "inspect", image], check=False, capture_output=True, timeout=60
    )
    return proc.returncode == 0


def _inspect(image: str, template: str) -> str:
    proc = subprocess.run(
        ["docker", "image", "inspect", "--format", template, image],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.stdout.strip() if proc.returncode == 0 else ""


def try_pull(image: str) -> bool:
    try:
        proc = subprocess.run(
            ["docker", "pull", image], check=False, capture_output=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0


def resolve_base(explicit: str | None = None) -> str:
    """The base image: ``explicit``/``$KAFKA_BASE_IMAGE``, else the registry's Debian if
    present or pullable, else the debootstrap image (made now if missing)."""
    chosen = explicit or os.environ.get("KAFKA_BASE_IMAGE", "").strip()
    if chosen:
        if not image_exists(chosen) and not try_pull(chosen):
            raise ImageBuildError(f"base image {chosen} is neither present nor pullable")
        return chosen
    if image_exists(REGISTRY_BASE) or try_pull(REGISTRY_BASE):
        jars.progress(f"base image {REGISTRY_BASE} (from a registry)")
        return REGISTRY_BASE
    if image_exists(DEBOOTSTRAP_BASE):
        jars.progress(f"base image {DEBOOTSTRAP_BASE} (made earlier with debootstrap)")
        return DEBOOTSTRAP_BASE
    jars.progress(f"no registry reachable for {REGISTRY_BASE}: making a base with debootstrap")
    return debootstrap_base(DEBOOTSTRAP_BASE)


def debootstrap_base(tag: str, mirror: str | None = None) -> str:
    """A minimal Debian root filesystem from Debian's packages, imported as ``tag``."""
    debootstrap = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").exists() else None
    )
    if debootstrap is None:
        raise ImageBuildError(
            "no base image: no registry is reachable and debootstrap is missing "
            "(apt-get install debootstrap, as root)"
        )
    if os.geteuid() != 0:
        raise ImageBuildError("no base image: debootstrap needs root (or a reachable registry)")
    mirror = mirror or os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="aiokafka-lead-rootfs-", dir="/var/tmp") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log = Path(tmp) / "debootstrap.log"
        with log.open("w") as out:
            proc = subprocess.run(
                [debootstrap, "--variant=minbase", DEBIAN_SUITE, str(rootfs), mirror],
                check=False,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=1800,
            )
        if proc.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            raise ImageBuildError(f"debootstrap failed (exit {proc.returncode}):\n{tail}")
        jars.progress(f"debootstrap {DEBIAN_SUITE} done", started)
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (rootfs / leftover).glob("*"):
                if item.is_file():
                    item.unlink()
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(
            ["docker", "import", "--change", 'CMD ["bash"]', "-", tag],
            check=False,
            stdin=tar.stdout,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert tar.stdout is not None
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise ImageBuildError(f"docker import failed: {imported.stderr.strip()}")
    jars.progress(f"base image {tag} imported", started)
    return tag


def context_hash(context: Path, libs: Path, base_id: str) -> str:
    """Hash of everything the build reads: the context files, the jar set, the base."""
    digest = hashlib.sha256(base_id.encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file() or p.is_symlink()):
        digest.update(str(path.relative_to(context)).encode())
        if path.is_symlink():
            digest.update(b"->" + os.readlink(path).encode())
        else:
            digest.update(path.read_bytes())
            digest.update(b"x" if os.access(path, os.X_OK) else b"-")
    for jar in sorted(libs.glob("*.jar")):
        digest.update(f"{jar.name}:{jar.stat().st_size}".encode())
    return digest.hexdigest()[:32]


def build(
    version: str = jars.DEFAULT_KAFKA_VERSION,
    *,
    tag: str | None = None,
    base: str | None = None,
    force: bool = False,
) -> str:
    """Build (or find up to date) the broker image and return its tag."""
    tag = tag or local_tag(version)
    problem = docker_problem()
    if problem:
        raise ImageBuildError(f"cannot build {tag}: {problem}")
    context = docker_context_dir()
    if not (context / "Dockerfile").is_file():
        raise ImageBuildError(f"no Dockerfile in {context} (run from a source checkout)")
    started = time.monotonic()
    libs = jars.provision(version, quiet=True)
    base_image = resolve_base(base)
    wanted = context_hash(context, libs, _inspect(base_image, "{{.Id}}"))
    have = _inspect(tag, '{{index .Config.Labels "' + HASH_LABEL + '"}}')
    if have == wanted and not force:
        jars.progress(f"{tag} is up to date (inputs unchanged)", started)
        return tag
    jars.progress(f"building {tag} from {base_image} with Kafka {version} ...")
    with tempfile.TemporaryDirectory(prefix="aiokafka-lead-image-") as tmp:
        ctx = Path(tmp) / "context"
        shutil.copytree(context, ctx, symlinks=True)
        (ctx / "libs").mkdir()
        for jar in libs.glob("*.jar"):
            try:
                os.link(jar, ctx / "libs" / jar.name)
            except OSError:
                shutil.copy2(jar, ctx / "libs" / jar.name)
        cmd = [
            "docker",
            "build",
            "--build-arg",
            f"BASE_IMAGE={base_image}",
            "--build-arg",
            f"KAFKA_VERSION={version}",
            "--label",
            f"{HASH_LABEL}={wanted}",
            "--tag",
            tag,
            str(ctx),
        ]
        # The classic builder works with every engine a distribution ships (no buildx).
        env = {**os.environ, "DOCKER_BUILDKIT": "0"}
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:
            lines.append(line.rstrip())
            if line.startswith("Step ") or "error" in line.lower():
                jars.progress(f"  {line.rstrip()}", started)
        if proc.wait() != 0:
            raise ImageBuildError(
                f"docker build of {tag} failed (exit {proc.returncode}):\n" + "\n".join(lines[-30:])
            )
    jars.progress(f"built {tag}", started)
    return tag


def ensure(version: str = jars.DEFAULT_KAFKA_VERSION) -> str:
    """An image the Docker tests can run: ``$KAFKA_IMAGE`` if set (it must exist or pull),
    else the official image if present or pullable, else the locally built one."""
    problem = docker_problem()
    if problem:
        raise ImageBuildError(problem)
    explicit = os.environ.get(IMAGE_ENV, "").strip()
    if explicit:
        if image_exists(explicit) or try_pull(explicit):
            return explicit
        raise ImageBuildError(
            f"{IMAGE_ENV}={explicit} is neither present nor pullable "
            f"(`make kafka-image` builds {local_tag(version)})"
        )
    official = f"apache/kafka:{version}"
    if image_exists(official) or try_pull(official):
        jars.progress(f"using the official image {official}")
        return official
    jars.progress(f"{official} cannot be pulled here: building {local_tag(version)}")
    return build(version)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m aiokafka_lead.testing.kafka_image",
        description="Build the project's KRaft broker image (apache/kafka's env contract).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build aiokafka-lead/kafka:<version> (skipped if current)")
    b.add_argument("--kafka-version", default=jars.DEFAULT_KAFKA_VERSION)
    b.add_argument("--tag", help="image tag (default aiokafka-lead/kafka:<version>)")
    b.add_argument("--base", help="base image (default: registry Debian, else debootstrap)")
    b.add_argument("--force", action="store_true", help="rebuild even when up to date")
    e = sub.add_parser(
        "ensure", help="print an image to test with: $KAFKA_IMAGE, apache/kafka, or build ours"
    )
    e.add_argument("--kafka-version", default=jars.DEFAULT_KAFKA_VERSION)
    sub.add_parser("check", help="exit 0 when a Docker engine answers, else print why")
    args = parser.parse_args(argv)
    if args.command == "check":
        problem = docker_problem()
        print(problem or "docker engine available")
        return 1 if problem else 0
    try:
        if args.command == "ensure":
            tag = ensure(args.kafka_version)
        else:
            tag = build(args.kafka_version, tag=args.tag, base=args.base, force=args.force)
    except ImageBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(tag)
    return 0


__all__ = ["DEFAULT_IMAGE", "IMAGE_ENV", "ImageBuildError", "docker_problem", "ensure", "local_tag"]


if __name__ == "__main__":
    sys.exit(main())
