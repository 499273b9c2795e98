"""One HTTP/1.1 exchange over asyncio streams: what the registry client needs, no dependency.

A request opens a connection, sends one request with ``Connection: close`` and reads the
answer (``Content-Length``, chunked, or up to the close). Registry calls are rare (their
answers are cached), so a connection per call costs nothing that matters.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

#: an answer larger than this is not a registry's: refused rather than read into memory
MAX_BODY = 64 * 1024 * 1024


class HttpProtocolError(OSError):
    """The server's answer was not well-formed HTTP/1.1."""


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a base URL points: scheme, host, port, path prefix (no trailing slash), and the
    ``user:password@`` credentials it carried (kept out of ``url``, which errors show)."""

    tls: bool
    host: str
    port: int
    prefix: str
    credentials: tuple[str, str] | None = None

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError(
                "schema registry URL: expected http://host[:port][/path] or https://..., "
                f"not {parts.scheme or '(no scheme)'}://{parts.hostname or '(no host)'}"
            )
        tls = parts.scheme == "https"
        port = parts.port or (443 if tls else 80)
        credentials = None
        if parts.username is not None:
            credentials = (unquote(parts.username), unquote(parts.password or ""))
        return cls(tls, parts.hostname, port, parts.path.rstrip("/"), credentials)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{self.prefix}"


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        line = await reader.readline()
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise HttpProtocolError(f"bad chunk size line {line[:40]!r}") from None
        if size == 0:
            await reader.readline()
            return bytes(body)
        if len(body) + size > MAX_BODY:
            raise HttpProtocolError("answer body over the size limit")
        body += await reader.readexactly(size)
        await reader.readexactly(2)


async def _read_to_close(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while chunk := await reader.read(65536):
        body += chunk
        if len(body) > MAX_BODY:
            raise HttpProtocolError("answer body over the size limit")
    return bytes(body)


async def _read_response(reader: asyncio.StreamReader) -> HttpResponse:
    status_line = await reader.readline()
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise HttpProtocolError(f"not an HTTP answer: {status_line[:60]!r}")
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in {b"\r\n", b"\n", b""}:
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if length > MAX_BODY:
            raise HttpProtocolError("answer body over the size limit")
        body = await reader.readexactly(length)
    else:
        body = await _read_to_close(reader)
    return HttpResponse(int(parts[1]), headers, body)


async def request(
    endpoint: Endpoint,
    method: str,
    path: str,
    *,
    headers: dict[str, str],
    body: bytes | None,
    ssl_context: ssl.SSLContext | None,
) -> HttpResponse:
    """Send one request and read its answer; OSError (refused, reset, closed early) propagates."""
    context = (ssl_context or ssl.create_default_context()) if endpoint.tls else None
    reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port, ssl=context)
    try:
        host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host  # IPv6 in brackets
        lines = [f"{method} {endpoint.prefix}{path} HTTP/1.1", f"Host: {host}:{endpoint.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines += [f"Content-Length: {len(body or b'')}", "Connection: close", "", ""]
        writer.write("\r\n".join(lines).encode("latin-1") + (body or b""))
        await writer.drain()
        try:
            return await _read_response(reader)
        except asyncio.IncompleteReadError as exc:
            raise HttpProtocolError("the connection closed inside the answer") from exc
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
