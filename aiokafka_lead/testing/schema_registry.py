"""A schema registry for the tests: the Confluent REST API's subjects, versions, ids, GUIDs,
compatibility (checked for Avro) and config, in memory, on a local port (HTTPS with an
``ssl_context``).

``SchemaRegistryServer().start()`` serves it from a thread of this process; ``.url`` is its
address. Confluent's clients and ours both talk to it, so a test proves both sides against
one registry. For the error paths a test sets ``basic_auth`` (then 401 without it) or asks
``fail_next(count, status)`` (the next requests answer that status). The answers carry
Confluent's error codes: 40401 subject, 40402 version, 40403 schema not found, 409
incompatible (the registry's message naming each problem), 42201 invalid schema, 42203
invalid compatibility level. ``python -m aiokafka_lead.testing.schema_registry --port N``
serves one until interrupted.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import ssl
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from aiokafka_lead.schema_registry.errors import RegistryErrorCode as Code
from aiokafka_lead.testing.avro_compat import read_problems

LEVELS = {
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
}


class RegistryAnswer(Exception):
    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.error_code, self.message = status, error_code, message


@dataclass
class Stored:
    id: int
    guid: str
    schema: str
    schema_type: str
    references: list[dict[str, Any]]

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": self.schema}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = self.references
        return out

    def entry(self, subject: str | None = None, version: int | None = None) -> dict[str, Any]:
        """The answer about this schema (with its subject and version when known)."""
        out: dict[str, Any] = {"id": self.id, "guid": self.guid}
        if subject is not None:
            out |= {"subject": subject, "version": version}
        return out | self.body()


@dataclass
class Registry:
    """The state and the rules, apart from HTTP."""

    schemas: list[Stored] = field(default_factory=list)
    subjects: dict[str, list[int]] = field(default_factory=dict)  # version n -> schemas id at [n-1]
    deleted: dict[str, list[int]] = field(default_factory=dict)  # soft-deleted subjects
    levels: dict[str | None, str] = field(default_factory=lambda: {None: "BACKWARD"})
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _versions(self, subject: str) -> list[int]:
        if subject not in self.subjects:
            raise RegistryAnswer(404, Code.SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")
        return self.subjects[subject]

    def version(self, subject: str, version: str) -> dict[str, Any]:
        ids = self._versions(subject)
        number = len(ids) if version in {"latest", "-1"} else int(version) if version.isdigit() else 0
        if not 1 <= number <= len(ids):
            raise RegistryAnswer(404, Code.VERSION_NOT_FOUND, f"Version {version} not found.")
        return self.schemas[ids[number - 1] - 1].entry(subject, number)

    def by_id(self, schema_id: int) -> Stored:
        if not 1 <= schema_id <= len(self.schemas):
            raise RegistryAnswer(404, Code.SCHEMA_NOT_FOUND, f"Schema {schema_id} not found")
        return self.schemas[schema_id - 1]

    def by_guid(self, guid: str) -> Stored:
        for stored in self.schemas:
            if stored.guid == guid:
                return stored
        raise RegistryAnswer(404, Code.SCHEMA_NOT_FOUND, f"Schema {guid} not found")

    # -- parsing and comparing ------------------------------------------------------------

    def _parse_avro(self, text: str, references: list[dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
        import fastavro

        names: dict[str, Any] = {}
        for ref in references:
            referenced = self.version(ref["subject"], str(ref["version"]))
            refs = referenced.get("references", [])
            self._parse_avro(referenced["schema"], refs)
            fastavro.parse_schema(json.loads(referenced["schema"]), named_schemas=names)
        return fastavro.parse_schema(json.loads(text), named_schemas=names), names

    def _validate(self, text: str, schema_type: str, references: list[dict[str, Any]]) -> None:
        try:
            if schema_type == "AVRO":
                self._parse_avro(text, references)
            elif schema_type == "JSON":
                import jsonschema

                document = json.loads(text)
                jsonschema.validators.validator_for(document).check_schema(document)
            elif schema_type == "PROTOBUF":
                from google.protobuf import descriptor_pb2

                descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text, validate=True))
            else:
                raise RegistryAnswer(422, Code.INVALID_SCHEMA, f"Invalid schema type {schema_type}")
        except RegistryAnswer as answer:
            if answer.error_code == Code.INVALID_SCHEMA:
                raise
            missing = f"Invalid schema: a reference is missing: {answer.message}"
            raise RegistryAnswer(422, Code.INVALID_SCHEMA, missing) from None
        except Exception as exc:
            details = f"Invalid schema {text[:200]}, details: {exc}"
            raise RegistryAnswer(422, Code.INVALID_SCHEMA, details) from None

    @staticmethod
    def _same(stored: Stored, text: str, schema_type: str, references: list[dict[str, Any]]) -> bool:
        if stored.schema_type != schema_type or stored.references != references:
            return False
        if schema_type == "PROTOBUF":
            return stored.schema == text
        return bool(json.loads(stored.schema) == json.loads(text))

    def _problems(self, subject: str, new: Stored, level: str) -> list[str]:
        if new.schema_type != "AVRO" or level == "NONE":
            return []
        ids = self.subjects.get(subject, [])
        olds = ids if level.endswith("TRANSITIVE") else ids[-1:]
        parsed_new, new_names = self._parse_avro(new.schema, new.references)
        problems = []
        for old_id in olds:
            old = self.schemas[old_id - 1]
            parsed_old, old_names = self._parse_avro(old.schema, old.references)
            if level.startswith(("BACKWARD", "FULL")):
                problems += read_problems(parsed_new, parsed_old, new_names, old_names)
            if level.startswith(("FORWARD", "FULL")):
                problems += read_problems(parsed_old, parsed_new, old_names, new_names)
        return problems

    # -- the calls that change or compare ---------------------------------------------------

    def register(self, subject: str, body: dict[str, Any]) -> dict[str, Any]:
        text, schema_type, references = self._read_body(body)
        for version, schema_id in enumerate(self.subjects.get(subject, []), 1):
            stored = self.schemas[schema_id - 1]
            if self._same(stored, text, schema_type, references):
                return stored.entry(subject, version)
        self._validate(text, schema_type, references)
        existing = next((s for s in self.schemas if self._same(s, text, schema_type, references)), None)
        candidate = existing or Stored(
            len(self.schemas) + 1, str(uuid.uuid4()), text, schema_type, references
        )
        level = self.levels.get(subject, self.levels[None])
        problems = self._problems(subject, candidate, level)
        if problems:
            raise RegistryAnswer(
                409,
                Code.INCOMPATIBLE_SCHEMA,
                f"Schema being registered is incompatible with an earlier schema for subject "
                f'"{subject}", details: {problems} (compatibility {level})',
            )
        if existing is None:
            self.schemas.append(candidate)
        self.subjects.setdefault(subject, []).append(candidate.id)
        return candidate.entry(subject, len(self.subjects[subject]))

    def lookup(self, subject: str, body: dict[str, Any]) -> dict[str, Any]:
        text, schema_type, references = self._read_body(body)
        for version, schema_id in enumerate(self._versions(subject), 1):
            stored = self.schemas[schema_id - 1]
            if self._same(stored, text, schema_type, references):
                return stored.entry(subject, version)
        raise RegistryAnswer(404, Code.SCHEMA_NOT_FOUND, "Schema not found")

    def compatibility(self, subject: str, version: str, body: dict[str, Any]) -> dict[str, Any]:
        text, schema_type, references = self._read_body(body)
        self._validate(text, schema_type, references)
        if subject not in self.subjects:
            return {"is_compatible": True}
        old = self.version(subject, version)
        level = self.levels.get(subject, self.levels[None])
        candidate = Stored(0, "", text, schema_type, references)
        saved = self.subjects[subject]
        self.subjects[subject] = [old["id"]]
        try:
            problems = self._problems(subject, candidate, level.removesuffix("_TRANSITIVE"))
        finally:
            self.subjects[subject] = saved
        return {"is_compatible": not problems, "messages": problems}

    def delete(self, subject: str, permanent: bool) -> list[int]:
        """A subject's versions, soft-deleted (its schemas stay readable by id), or then
        removed for good with ``permanent``."""
        if permanent:
            if subject in self.subjects:
                raise RegistryAnswer(
                    404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
                )
            if subject not in self.deleted:
                raise RegistryAnswer(404, Code.SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")
            return list(range(1, len(self.deleted.pop(subject)) + 1))
        ids = self._versions(subject)
        self.deleted[subject] = self.subjects.pop(subject)
        return list(range(1, len(ids) + 1))

    def set_level(self, subject: str | None, body: dict[str, Any]) -> dict[str, Any]:
        level = str(body.get("compatibility", "")).upper()
        if level not in LEVELS:
            message = f"Invalid compatibility level {level!r}"
            raise RegistryAnswer(422, Code.INVALID_COMPATIBILITY_LEVEL, message)
        self.levels[subject] = level
        return {"compatibility": level}

    @staticmethod
    def _read_body(body: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]]]:
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise RegistryAnswer(422, Code.INVALID_SCHEMA, "Invalid schema: the body has no 'schema' string")
        refs = [
            {"name": r["name"], "subject": r["subject"], "version": int(r["version"])}
            for r in body.get("references") or []
        ]
        return body["schema"], body.get("schemaType") or "AVRO", refs


_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    (method, re.compile(f"^{pattern}$"), name)
    for method, pattern, name in [
        ("GET", r"/subjects", "subjects"),
        ("GET", r"/schemas/types", "types"),
        ("GET", r"/subjects/(?P<subject>[^/]+)/versions", "versions"),
        ("GET", r"/subjects/(?P<subject>[^/]+)/versions/(?P<version>[^/]+)", "version"),
        ("POST", r"/subjects/(?P<subject>[^/]+)/versions", "register"),
        ("POST", r"/subjects/(?P<subject>[^/]+)", "lookup"),
        ("DELETE", r"/subjects/(?P<subject>[^/]+)", "delete"),
        ("GET", r"/schemas/ids/(?P<id>\d+)", "by_id"),
        ("GET", r"/schemas/guids/(?P<guid>[0-9a-fA-F-]+)", "by_guid"),
        ("POST", r"/compatibility/subjects/(?P<subject>[^/]+)/versions/(?P<version>[^/]+)", "compatibility"),
        ("GET", r"/config", "get_config"),
        ("PUT", r"/config", "put_config"),
        ("GET", r"/config/(?P<subject>[^/]+)", "get_config"),
        ("PUT", r"/config/(?P<subject>[^/]+)", "put_config"),
    ]
]


class SchemaRegistryServer:
    """The registry on ``127.0.0.1:port`` (0: any free port), served from a thread."""

    def __init__(
        self,
        port: int = 0,
        basic_auth: tuple[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.registry = Registry()
        self.basic_auth = basic_auth
        self._faults: list[int] = []
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                auth = self.headers.get("Authorization")
                status, body = server.handle(self.command, self.path, auth, self._body())
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return raw.decode("utf-8", "replace")

            do_GET = do_POST = do_PUT = do_DELETE = _answer

        self._http = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._http.daemon_threads = True
        self._tls = ssl_context is not None
        if ssl_context is not None:
            self._http.socket = ssl_context.wrap_socket(self._http.socket, server_side=True)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"{'https' if self._tls else 'http'}://{host!s}:{port}"

    def start(self) -> SchemaRegistryServer:
        self._thread = threading.Thread(target=self._serve, name="schema-registry", daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        self._http.serve_forever(poll_interval=0.05)  # stop() returns within one interval

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> SchemaRegistryServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def fail_next(self, count: int, status: int = 503) -> None:
        """The next ``count`` requests answer ``status`` (a 5xx: the registry is in trouble)."""
        with self.registry.lock:
            self._faults += [status] * count

    def handle(self, method: str, target: str, authorization: str | None, body: Any) -> tuple[int, Any]:
        with self.registry.lock:
            self.requests += 1
            if self._faults:
                status = self._faults.pop(0)
                return status, {"error_code": status * 100 + 1, "message": "unavailable (a fault asked for)"}
            if self.basic_auth is not None:
                expected = base64.b64encode(":".join(self.basic_auth).encode()).decode()
                if authorization != f"Basic {expected}":
                    return 401, {"error_code": 401, "message": "Unauthorized"}
            parts = urlsplit(target)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            for route_method, pattern, name in _ROUTES:
                match = pattern.match(parts.path)
                if match and route_method == method:
                    args = {k: unquote(v) for k, v in match.groupdict().items()}
                    try:
                        return 200, self._call(name, args, query, body)
                    except RegistryAnswer as answer:
                        return answer.status, {"error_code": answer.error_code, "message": answer.message}
            return 404, {"error_code": 404, "message": f"HTTP 404 Not Found: {method} {parts.path}"}

    def _call(self, name: str, args: dict[str, str], query: dict[str, str], body: Any) -> Any:
        registry = self.registry
        subject = args.get("subject")
        if name == "subjects":
            return sorted(s for s, ids in registry.subjects.items() if ids)
        if name == "types":
            return ["AVRO", "JSON", "PROTOBUF"]
        if name == "versions":
            return list(range(1, len(registry._versions(args["subject"])) + 1))
        if name == "version":
            return registry.version(args["subject"], args["version"])
        if name == "register":
            return registry.register(args["subject"], body)
        if name == "lookup":
            return registry.lookup(args["subject"], body)
        if name == "delete":
            return registry.delete(args["subject"], permanent=query.get("permanent") == "true")
        if name == "by_id":
            return registry.by_id(int(args["id"])).entry()
        if name == "by_guid":
            return registry.by_guid(args["guid"].lower()).entry()
        if name == "compatibility":
            return registry.compatibility(args["subject"], args["version"], body)
        if name == "get_config":
            return {"compatibilityLevel": registry.levels.get(subject, registry.levels[None])}
        assert name == "put_config"
        return registry.set_level(subject, body)


def main() -> None:
    parser = argparse.ArgumentParser(description="An in-memory schema registry (Confluent's REST API)")
    parser.add_argument("--port", type=int, default=8081)
    port = parser.parse_args().port
    server = SchemaRegistryServer(port)
    print(f"schema registry on {server.url}", flush=True)
    try:
        server._http.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._http.server_close()


if __name__ == "__main__":
    main()
