"""A real network between clients and brokers on one machine: Toxiproxy v2.

One proxy per broker, in front of the broker's ``PROXIED`` client listener (which the
broker advertises at the proxy's port, so clients only ever reach it through the proxy),
adds latency with jitter and a bandwidth limit in each direction. Toxiproxy is built once
with ``go install`` from the Go module proxy and cached per user beside the Kafka jars.
Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka_lead.testing.cluster import jars
from aiokafka_lead.testing.cluster.config import PROXIED_LISTENER, free_ports
from aiokafka_lead.testing.cluster.node import ClusterError

TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
TOXIPROXY_VERSION = "v2.5.0"
HOST = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class LinkConditions:
    """One client-to-broker link, the same in each direction."""

    latency_ms: int  # one way
    jitter_ms: int  # +- around latency_ms, uniform
    bandwidth_kb_s: int  # 1 KB = 1000 bytes, each direction

    def describe(self) -> str:
        return (
            f"{self.latency_ms} ms +- {self.jitter_ms} ms one way (RTT ~{2 * self.latency_ms} ms), "
            f"{self.bandwidth_kb_s:,} KB/s ({self.bandwidth_kb_s * 8 / 1000:.1f} Mbit/s) "
            "per link and direction"
        )


def toxiproxy_server() -> tuple[Path | None, str]:
    """(the cached toxiproxy-server binary, "") or (None, why there is none), building it
    with ``go install`` the first time."""
    target = jars.cache_root() / f"toxiproxy-{TOXIPROXY_VERSION}" / "toxiproxy-server"
    if target.exists():
        return target, ""
    go = shutil.which("go")
    if go is None:
        return None, "Go is not installed, so Toxiproxy cannot be built"
    jars.progress(f"building Toxiproxy {TOXIPROXY_VERSION} with go install (once; cached in {target.parent})")
    with tempfile.TemporaryDirectory(prefix="toxiproxy-build-") as tmp:
        env = {**os.environ, "GOBIN": tmp, "GOFLAGS": "-mod=mod"}
        proc = subprocess.run(
            [go, "install", f"{TOXIPROXY_MODULE}/cmd/server@{TOXIPROXY_VERSION}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if proc.returncode != 0:
            return None, f"go install of Toxiproxy failed: {proc.stderr.strip()[-300:]}"
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".tmp")
        shutil.copy2(Path(tmp) / "server", partial)
        partial.replace(target)
    return target, ""


class Toxiproxy:
    """A toxiproxy-server process of ours and the proxies it serves."""

    def __init__(self, binary: Path, log_file: Path) -> None:
        self.binary = binary
        self.log_file = log_file
        self.api_port = free_ports(1, HOST)[0]
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 20.0) -> Toxiproxy:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            self._proc = subprocess.Popen(
                [str(self.binary), "-host", HOST, "-port", str(self.api_port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    self._call("GET", "/version")
                    return self
                except (OSError, urllib.error.URLError):
                    if self._proc.poll() is not None or time.monotonic() > deadline:
                        raise ClusterError(f"toxiproxy-server did not start (log: {self.log_file})") from None
                    time.sleep(0.1)
        except BaseException:
            self.stop()  # never leave a server of ours behind
            raise

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
            self._proc = None

    def __enter__(self) -> Toxiproxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://{HOST}:{self.api_port}{path}", data=data, method=method,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                answer: bytes = response.read()
        except urllib.error.HTTPError as exc:  # Toxiproxy says why in the body
            detail = exc.read().decode(errors="replace").strip()
            raise RuntimeError(f"Toxiproxy {method} {path}: HTTP {exc.code}: {detail}") from exc
        return answer

    def proxy(self, name: str, listen_port: int, upstream_port: int, link: LinkConditions) -> None:
        """``listen_port`` forwards to ``upstream_port`` through ``link``, both ways."""
        self._call(
            "POST", "/proxies",
            {"name": name, "listen": f"{HOST}:{listen_port}", "upstream": f"{HOST}:{upstream_port}",
             "enabled": True},
        )  # fmt: skip
        for stream in ("upstream", "downstream"):
            self._call(
                "POST", f"/proxies/{name}/toxics",
                {"name": f"latency-{stream}", "type": "latency", "stream": stream, "toxicity": 1.0,
                 "attributes": {"latency": link.latency_ms, "jitter": link.jitter_ms}},
            )  # fmt: skip
            self._call(
                "POST", f"/proxies/{name}/toxics",
                {"name": f"bandwidth-{stream}", "type": "bandwidth", "stream": stream, "toxicity": 1.0,
                 "attributes": {"rate": link.bandwidth_kb_s}},
            )  # fmt: skip


    def set_enabled(self, name: str, enabled: bool) -> None:
        """Cut the proxy ``name`` (its connections closed, new ones refused) or restore it:
        a network partition between the clients and that broker."""
        self._call("POST", f"/proxies/{name}", {"enabled": enabled})


def proxy_cluster(toxiproxy: Toxiproxy, cluster: Any, link: LinkConditions) -> str:
    """A proxy per node of a ``KafkaCluster(proxied=True)``; returns the bootstrap string
    through the proxies."""
    for node_id in cluster.node_ids:
        ports = cluster.ports(node_id)
        toxiproxy.proxy(
            f"broker-{node_id}",
            ports.advertised_port(PROXIED_LISTENER),
            ports.client[PROXIED_LISTENER],
            link,
        )
    bootstrap: str = cluster.bootstrap(PROXIED_LISTENER)
    return bootstrap
