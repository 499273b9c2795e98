"""Scripted faults: what an interceptor may tell a fake broker to do with one request.

An interceptor is ``fn(node_id, header, request) -> Action | None``; ``None`` means
"handle normally" and does not use up the interceptor's ``times``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import Request, Response, Struct


@dataclass(frozen=True, slots=True)
class Respond:
    """Answer with this response body (encoded at the request's version)."""

    response: Response


@dataclass(frozen=True, slots=True)
class Error:
    """Answer with a response of the request's API carrying ``error_code`` everywhere,
    ``after_s`` seconds later (the connection stays busy meanwhile)."""

    error_code: int
    after_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Delay:
    """Wait, then handle the request normally (the connection stays busy meanwhile)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Drop:
    """Never answer this request; the connection keeps serving later ones."""


@dataclass(frozen=True, slots=True)
class Truncate:
    """Send the first ``n_bytes`` of the (size-prefixed) response, then close."""

    n_bytes: int


@dataclass(frozen=True, slots=True)
class Corrupt:
    """Send a response whose framing and correlation id are valid but whose body is garbage."""


@dataclass(frozen=True, slots=True)
class Close:
    """Close the connection without answering."""


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Handle the request normally, then answer with what ``fn`` makes of the response: a
    changed response (encoded at the request's version), raw bytes to write as they are (a
    whole frame, size prefix included), or ``None`` (no answer; the connection stays open).
    ``fn`` gets the response and its encoded frame."""

    fn: Callable[[Response, bytes], Response | bytes | None]


Action: TypeAlias = Respond | Error | Delay | Drop | Truncate | Corrupt | Close | Rewrite
InterceptFn: TypeAlias = Callable[[int, RequestHeader, Any], Action | None]


class Interceptor:
    """A registered interceptor; ``remove()`` unregisters it."""

    def __init__(
        self,
        api_key: int,
        fn: InterceptFn,
        times: int | None,
        registry: list[Interceptor],
    ) -> None:
        self.api_key = api_key
        self.fn = fn
        self.remaining = times
        self.fired = 0
        self._registry = registry

    @property
    def active(self) -> bool:
        return self in self._registry

    def remove(self) -> None:
        if self in self._registry:
            self._registry.remove(self)

    def consult(self, node_id: int, header: RequestHeader, request: Any) -> Action | None:
        action = self.fn(node_id, header, request)
        if action is None:
            return None
        self.fired += 1
        if self.remaining is not None:
            self.remaining -= 1
            if self.remaining <= 0:
                self.remove()
        return action


class Interceptors:
    """The interceptors registered on a cluster, consulted in registration order."""

    def __init__(self) -> None:
        self._registered: list[Interceptor] = []

    def add(self, api_key: int, fn: InterceptFn, times: int | None) -> Interceptor:
        handle = Interceptor(api_key, fn, times, self._registered)
        self._registered.append(handle)
        return handle

    def clear(self) -> None:
        self._registered.clear()

    def consult(self, node_id: int, header: RequestHeader, request: Any) -> Action | None:
        """The first action an interceptor of the request's api key asks for, if any."""
        for handle in list(self._registered):
            if handle.api_key == header.api_key:
                action = handle.consult(node_id, header, request)
                if action is not None:
                    return action
        return None


# --------------------------------------------------------- generic error responses
_PARTITION_ALIASES = ("index", "partition_index", "partition")
_TOPIC_ALIASES = ("name", "topic")
_SCALAR_KINDS = ("int8", "int16", "int32", "int64", "string", "bool", "uuid")


def _aliases(attr: str) -> tuple[str, ...]:
    if attr in _PARTITION_ALIASES:
        return _PARTITION_ALIASES
    if attr in _TOPIC_ALIASES:
        return _TOPIC_ALIASES
    return (attr,)


def _fields(obj: type[Struct], version: int) -> list[Any]:
    return [f for f in obj._FIELDS if obj.field_in_version(f, version)]


def _score(resp_struct: type[Struct], req_struct: type[Struct], version: int) -> int:
    req_names = {f.attr for f in _fields(req_struct, version)}
    return sum(
        1
        for f in _fields(resp_struct, version)
        if not f.attr.endswith("error_code") and any(a in req_names for a in _aliases(f.attr))
    )


def _fill(resp: Struct, req: Struct | None, version: int, error_code: int) -> None:
    """Copy identifying fields from the request, set every error code, mirror arrays."""
    rcls = type(resp)
    req_fields = {f.attr: f for f in _fields(type(req), version)} if req is not None else {}
    used: set[str] = set()
    for f in _fields(rcls, version):
        if f.attr.endswith("error_code"):  # also partition_error_code (AddPartitionsToTxn)
            setattr(resp, f.attr, error_code)
            continue
        if f.kind == "array" and f.struct is not None:
            items: list[Struct] = []
            source = _pick_source(f, req_fields, used, version)
            if source is not None and req is not None:
                used.add(source.attr)
                for elem in getattr(req, source.attr) or []:
                    child = f.struct()
                    if isinstance(elem, Struct):
                        _fill(child, elem, version, error_code)
                    else:
                        _fill(child, None, version, error_code)
                        _set_scalar(child, elem, version)
                    items.append(child)
            setattr(resp, f.attr, items)
            continue
        if f.kind in _SCALAR_KINDS and req is not None:
            for alias in _aliases(f.attr):
                rf = req_fields.get(alias)
                if rf is not None and rf.kind == f.kind:
                    setattr(resp, f.attr, getattr(req, alias))
                    break


def _pick_source(f: Any, req_fields: dict[str, Any], used: set[str], version: int) -> Any:
    candidates = [
        rf for rf in req_fields.values() if rf.kind == "array" and rf.attr not in used
    ]
    best, best_score = None, 0
    for rf in candidates:
        if rf.struct is not None:
            score = _score(f.struct, rf.struct, version)
        else:  # e.g. partition_indexes -> partitions, coordinator_keys -> coordinators
            score = 1 if any(x.kind == rf.elem for x in _fields(f.struct, version)) else 0
            score = score if rf.attr.split("_")[0] in f.attr or "partition" in rf.attr else 0
        if score > best_score:
            best, best_score = rf, score
    return best


def _set_scalar(child: Struct, value: Any, version: int) -> None:
    kind = {int: "int32", str: "string"}.get(type(value))
    for f in _fields(type(child), version):
        if f.kind == kind and not f.attr.endswith("error_code"):
            setattr(child, f.attr, value)
            return


def error_response(request: Request, version: int, error_code: int) -> Response:
    """A response to ``request`` with ``error_code`` at the top level and in every item.

    Built from the schemas alone: response arrays mirror the request array whose element
    shares the most field names (topics -> responses, partition_data -> partition_responses),
    and identifying fields (names, ids, partition indexes, keys) are copied across.
    """
    response = type(request).RESPONSE_CLASS()
    _fill(response, request, version, error_code)
    return response
