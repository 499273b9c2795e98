"""A minimal, dependency-free Metadata probe used to decide when a node is ready.

The project's real client is written in parallel and must not be needed to start a
cluster, so this speaks just enough of the protocol by hand: one non-flexible
Metadata v4 request (null topics = all) and the broker list of its response.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass

_METADATA_API_KEY = 3
_METADATA_VERSION = 4  # non-flexible; still supported by Kafka 4.x (KIP-896 kept v4+)
_MAX_RESPONSE = 64 * 1024 * 1024
_correlation = itertools.count(1)


class ProbeError(Exception):
    """The node answered, but not with a well-formed Metadata response."""


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class MetadataInfo:
    brokers: tuple[BrokerInfo, ...]
    cluster_id: str | None
    controller_id: int

    def ports(self) -> dict[int, int]:
        """node id -> advertised port on the listener that was asked."""
        return {b.node_id: b.port for b in self.brokers}


def _request(correlation_id: int, client_id: str = "aiokafka_lead-probe") -> bytes:
    cid = client_id.encode()
    header = struct.pack(">hhih", _METADATA_API_KEY, _METADATA_VERSION, correlation_id, len(cid))
    body = struct.pack(">ib", -1, 0)  # topics = null (all), allow_auto_topic_creation = false
    payload = header + cid + body
    return struct.pack(">i", len(payload)) + payload


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    """Read exactly ``n`` bytes, however the kernel splits them, before ``deadline``."""
    buf = bytearray()
    while len(buf) < n:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("metadata probe timed out")
        sock.settimeout(remaining)
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed mid-response")
        buf += chunk
    return bytes(buf)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ProbeError("truncated metadata response")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return int(value)

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def nullable_string(self) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        if self.pos + length > len(self.data):
            raise ProbeError("truncated string in metadata response")
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise ProbeError("unexpected null string")
        return value


def parse_metadata_v4(correlation_id: int, payload: bytes) -> MetadataInfo:
    """Parse the response header and the broker list; the topic list is ignored."""
    r = _Reader(payload)
    if r.int32() != correlation_id:
        raise ProbeError("correlation id mismatch")
    r.int32()  # throttle_time_ms
    count = r.int32()
    if count < 0 or count > 100_000:
        raise ProbeError(f"implausible broker count {count}")
    brokers = []
    for _ in range(count):
        node_id = r.int32()
        host = r.string()
        port = r.int32()
        rack = r.nullable_string()
        brokers.append(BrokerInfo(node_id, host, port, rack))
    cluster_id = r.nullable_string()
    controller_id = r.int32()
    return MetadataInfo(tuple(brokers), cluster_id, controller_id)


def fetch_metadata(host: str, port: int, timeout: float = 5.0) -> MetadataInfo:
    """One Metadata round trip on a fresh plaintext connection; raises on any failure."""
    deadline = time.monotonic() + timeout
    correlation_id = next(_correlation) & 0x7FFFFFFF
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        sock.sendall(_request(correlation_id))
        (size,) = struct.unpack(">i", _recv_exact(sock, 4, deadline))
        if size < 8 or size > _MAX_RESPONSE:
            raise ProbeError(f"implausible response size {size}")
        return parse_metadata_v4(correlation_id, _recv_exact(sock, size, deadline))


def try_metadata(host: str, port: int, timeout: float = 5.0) -> MetadataInfo | None:
    """``fetch_metadata`` that returns None instead of raising (for readiness polling)."""
    try:
        return fetch_metadata(host, port, timeout)
    except (OSError, ProbeError):
        return None


def cluster_not_ready(nodes: Mapping[int, tuple[str, int]], timeout: float = 3.0) -> str | None:
    """None when every node (id -> host, port) answers Metadata listing every node at its
    port; otherwise a description of what is still missing."""
    want = {nid: port for nid, (_, port) in nodes.items()}
    for nid, (host, port) in nodes.items():
        md = try_metadata(host, port, timeout=timeout)
        if md is None:
            return f"node {nid} does not answer Metadata on {host}:{port} yet"
        got = md.ports()
        missing = {n: p for n, p in want.items() if got.get(n) != p}
        if missing:
            return f"node {nid} sees brokers {got}, still waiting for {missing}"
    return None
