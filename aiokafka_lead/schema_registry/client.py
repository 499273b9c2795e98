"""An asyncio client of the Confluent Schema Registry REST API, with caches.

Every answer that is not a success raises a :mod:`~aiokafka_lead.schema_registry.errors`
class carrying the registry's message. 408, 429 and 5xx answers and failed connections are
retried with exponential backoff until the request's deadline (``request_timeout_ms``), then
raise :class:`RegistryUnavailableError` naming the last cause; a TLS certificate that does
not verify is not retried. Schemas by id and by GUID, and the registrations looked up or
made, are cached for the client's lifetime (they never change in a registry); ``latest``
versions are asked again each time.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import ssl
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from aiokafka_lead.auth.oidc import RETRIABLE_STATUSES
from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.schema_registry import http
from aiokafka_lead.schema_registry.errors import (
    RegistryUnavailableError,
    SchemaRegistryError,
    error_for_status,
)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

TokenSource = str | Callable[[], str | Awaitable[str]]


@dataclass(frozen=True, slots=True)
class SchemaReference:
    """A schema this one imports: its ``name`` in the schema, and where it is registered."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class Schema:
    """A schema's text, its type (``AVRO``, ``PROTOBUF``, ``JSON``) and its references."""

    schema_str: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = ()

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"schema": self.schema_str}
        if self.schema_type != "AVRO":
            body["schemaType"] = self.schema_type
        if self.references:
            body["references"] = [
                {"name": ref.name, "subject": ref.subject, "version": ref.version} for ref in self.references
            ]
        return body

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Schema:
        refs = tuple(
            SchemaReference(ref["name"], ref["subject"], int(ref["version"]))
            for ref in body.get("references") or ()
        )
        return cls(body["schema"], body.get("schemaType") or "AVRO", refs)


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """A schema as registered: its id, GUID (``None`` from registries that give none),
    subject and version."""

    schema_id: int
    guid: uuid.UUID | None
    subject: str | None
    version: int | None
    schema: Schema


def _guid(body: dict[str, Any]) -> uuid.UUID | None:
    value = body.get("guid")
    return uuid.UUID(value) if value else None


@dataclass(slots=True)
class _Caches:
    by_id: dict[int, tuple[Schema, uuid.UUID | None]] = field(default_factory=dict)
    formatted: dict[tuple[int | uuid.UUID, str | None], Schema] = field(default_factory=dict)
    registered: dict[tuple[str, Schema, bool], RegisteredSchema] = field(default_factory=dict)
    versions: dict[tuple[str, int], RegisteredSchema] = field(default_factory=dict)


class SchemaRegistryClient:
    """The registry at ``url`` (``http://`` or ``https://``, optionally with a path prefix
    such as Apicurio's ``/apis/ccompat/v7``).

    Authentication: ``basic_auth=(user, password)`` (Confluent Cloud's API key and secret,
    Karapace's users; or ``https://user:password@host`` in the URL) or ``bearer_token``, a
    string or a callable (sync or async) asked for the token before every request.
    ``ssl_context`` for a private CA or client certificates.
    """

    def __init__(
        self,
        url: str,
        *,
        basic_auth: tuple[str, str] | None = None,
        bearer_token: TokenSource | None = None,
        ssl_context: ssl.SSLContext | None = None,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 5_000,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        self._endpoint = http.Endpoint.parse(url)
        if self._endpoint.credentials is not None:
            if basic_auth is not None or bearer_token is not None:
                raise ValueError("the URL carries credentials: give no basic_auth or bearer_token too")
            basic_auth = self._endpoint.credentials
        if basic_auth is not None and bearer_token is not None:
            raise ValueError("give basic_auth or bearer_token, not both")
        if request_timeout_ms <= 0:
            raise ValueError(f"request_timeout_ms must be positive, not {request_timeout_ms}")
        #: the base URL without credentials (errors name it)
        self.url = self._endpoint.url
        self._ssl = ssl_context
        self._timeout_s = request_timeout_ms / 1000
        self._backoff = ExponentialBackoff(retry_backoff_ms, retry_backoff_max_ms)
        self._headers = {"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE, **(extra_headers or {})}
        if basic_auth is not None:
            token = base64.b64encode(f"{basic_auth[0]}:{basic_auth[1]}".encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {token}"
        self._bearer = bearer_token
        self._cache = _Caches()

    # -- transport ------------------------------------------------------------------------

    async def _auth_headers(self) -> dict[str, str]:
        if self._bearer is None:
            return self._headers
        token = self._bearer if isinstance(self._bearer, str) else self._bearer()
        if inspect.isawaitable(token):
            token = await token
        return {**self._headers, "Authorization": f"Bearer {token}"}

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One REST call (``path`` relative to the base URL), retried as the module says."""
        payload = None if body is None else json.dumps(body).encode()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        attempts = 0
        failed = ""  # the last attempt's failure, for the message when the deadline cuts a retry
        url = f"{self.url}{path}"
        while True:
            headers = await self._auth_headers()
            try:
                async with asyncio.timeout_at(deadline):
                    answer = await http.request(
                        self._endpoint, method, path, headers=headers, body=payload, ssl_context=self._ssl
                    )
            except ssl.SSLCertVerificationError as exc:
                raise SchemaRegistryError(
                    None, None, f"the registry's TLS certificate is refused: {exc}", url
                ) from exc
            except TimeoutError as exc:
                # the deadline cut this attempt: the last answer, if one came, says more
                cut = f"{failed} (the next attempt cut by the deadline)"
                cause = cut if failed else f"no answer: {exc!r}"
            except OSError as exc:
                cause = failed = f"no answer: {exc!r}"
            else:
                if 200 <= answer.status < 300:
                    return json.loads(answer.body) if answer.body else None
                error = self._error(answer, url)
                if answer.status not in RETRIABLE_STATUSES:
                    raise error
                cause = failed = str(error)
            delay = self._backoff.delay_s(attempts)
            attempts += 1
            if loop.time() + delay >= deadline:
                gave_up = f"gave up after {attempts} attempts in {self._timeout_s:g}s; last: {cause}"
                raise RegistryUnavailableError(None, None, gave_up, url)
            await asyncio.sleep(delay)

    @staticmethod
    def _error(answer: http.HttpResponse, url: str) -> SchemaRegistryError:
        try:
            body = json.loads(answer.body)
            code = body.get("error_code")
            message = str(body.get("message", answer.body.decode("utf-8", "replace")))
        except (ValueError, AttributeError):
            code, message = None, answer.body.decode("utf-8", "replace")[:500] or "(empty answer)"
        return error_for_status(answer.status, int(code) if isinstance(code, int) else None, message, url)

    # -- schemas ----------------------------------------------------------------------------

    async def register_schema(
        self, subject: str, schema: Schema, normalize: bool = False
    ) -> RegisteredSchema:
        """Register ``schema`` under ``subject`` (or find it there): its id and GUID."""
        return await self._registration(subject, schema, normalize, "/versions")

    async def lookup_schema(self, subject: str, schema: Schema, normalize: bool = False) -> RegisteredSchema:
        """The registration of ``schema`` under ``subject``; NotFoundError if it has none."""
        return await self._registration(subject, schema, normalize, "")

    async def _registration(
        self, subject: str, schema: Schema, normalize: bool, action: str
    ) -> RegisteredSchema:
        key = (subject, schema, normalize)
        cached = self._cache.registered.get(key)
        if cached is not None:
            return cached
        path = f"/subjects/{quote(subject, safe='')}{action}?normalize={str(normalize).lower()}"
        answer = await self.call("POST", path, schema.to_json())
        registered = await self._complete(subject, schema, answer)
        self._cache.registered[key] = registered
        return registered

    async def _complete(self, subject: str, schema: Schema, answer: dict[str, Any]) -> RegisteredSchema:
        schema_id = int(answer["id"])
        guid = _guid(answer)
        if guid is None:
            # older registries answer a registration with the id alone
            guid = await self.get_guid(schema_id)
        self._cache.by_id.setdefault(schema_id, (schema, guid))
        version = answer.get("version")
        return RegisteredSchema(schema_id, guid, answer.get("subject", subject), version, schema)

    async def get_schema(self, schema_id: int, fmt: str | None = None) -> Schema:
        """The schema with this id (cached); ``fmt="serialized"`` asks for Protobuf's
        base64 descriptor form."""
        if fmt is None and (cached := self._cache.by_id.get(schema_id)) is not None:
            return cached[0]
        if (formatted := self._cache.formatted.get((schema_id, fmt))) is not None:
            return formatted
        query = f"?format={quote(fmt)}" if fmt else ""
        answer = await self.call("GET", f"/schemas/ids/{schema_id}{query}")
        schema = Schema.from_json(answer)
        if fmt is None:
            self._cache.by_id[schema_id] = (schema, _guid(answer))
        else:
            self._cache.formatted[(schema_id, fmt)] = schema
        return schema

    async def get_guid(self, schema_id: int) -> uuid.UUID | None:
        """The GUID of the schema with this id (``None`` from registries that give none)."""
        cached = self._cache.by_id.get(schema_id)
        if cached is not None and cached[1] is not None:
            return cached[1]
        answer = await self.call("GET", f"/schemas/ids/{schema_id}")
        guid = _guid(answer)
        self._cache.by_id[schema_id] = (Schema.from_json(answer), guid)
        return guid

    async def get_schema_by_guid(self, guid: uuid.UUID, fmt: str | None = None) -> Schema:
        """The schema with this GUID (cached)."""
        if (cached := self._cache.formatted.get((guid, fmt))) is not None:
            return cached
        query = f"?format={quote(fmt)}" if fmt else ""
        answer = await self.call("GET", f"/schemas/guids/{guid}{query}")
        schema = Schema.from_json(answer)
        self._cache.formatted[(guid, fmt)] = schema
        return schema

    async def get_version(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        """A version of ``subject`` (a number, or ``"latest"``, which is never cached)."""
        if isinstance(version, int) and (cached := self._cache.versions.get((subject, version))) is not None:
            return cached
        answer = await self.call("GET", f"/subjects/{quote(subject, safe='')}/versions/{version}")
        schema = Schema.from_json(answer)
        registered = RegisteredSchema(
            int(answer["id"]), _guid(answer), answer["subject"], answer["version"], schema
        )
        self._cache.versions[(subject, registered.version or 0)] = registered
        return registered

    async def get_latest_version(self, subject: str) -> RegisteredSchema:
        return await self.get_version(subject, "latest")

    async def get_subjects(self) -> list[str]:
        return list(await self.call("GET", "/subjects"))

    async def get_versions(self, subject: str) -> list[int]:
        return list(await self.call("GET", f"/subjects/{quote(subject, safe='')}/versions"))

    async def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        versions = list(await self.call("DELETE", f"/subjects/{quote(subject, safe='')}"))
        if permanent:
            await self.call("DELETE", f"/subjects/{quote(subject, safe='')}?permanent=true")
        return versions

    async def test_compatibility(self, subject: str, schema: Schema, version: int | str = "latest") -> bool:
        """Whether ``schema`` is compatible with a version of ``subject`` under its rule."""
        answer = await self.call(
            "POST", f"/compatibility/subjects/{quote(subject, safe='')}/versions/{version}", schema.to_json()
        )
        return bool(answer["is_compatible"])

    async def set_compatibility(self, level: str, subject: str | None = None) -> str:
        """Set the compatibility rule (``BACKWARD``, ``FULL``, ``NONE``, ...) of a subject or globally."""
        path = "/config" if subject is None else f"/config/{quote(subject, safe='')}"
        answer = await self.call("PUT", path, {"compatibility": level.upper()})
        return str(answer["compatibility"])
