"""Lies a broker can tell in any field of any response, generated from the message schemas.

:func:`leaf_fields` lists every field of a response class at a version (descending into
structs and struct arrays, tagged fields included) as a path such as
``("topics", "*", "partitions", "*", "partition_index")``; :func:`hostile_values` gives the
values worth trying for its kind (the extremes of an integer, an empty or impossible
string, a null, garbage bytes, an empty or duplicated array); :func:`lie` makes a FakeCluster
``Rewrite`` that sets the path to the value in the broker's real answer. Wire-level faults
(a cut, a stall, the wrong correlation id, another API's body, trailing bytes) are in
:mod:`tests.support.script_server`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from aiokafka_lead.protocol.schema import Field, Struct
from aiokafka_lead.testing.fake import Rewrite

Path = tuple[str, ...]
EVERY = "*"

_INT_RANGE = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


@dataclass(frozen=True)
class Leaf:
    path: Path
    field: Field
    nullable: bool

    @property
    def name(self) -> str:
        return ".".join(p if p != EVERY else "[*]" for p in self.path).replace(".[*]", "[*]")


def leaf_fields(cls: type[Struct], version: int, prefix: Path = ()) -> list[Leaf]:
    """Every field of ``cls`` at ``version``, leaves of nested structs and arrays included."""
    out: list[Leaf] = []
    for f in cls._FIELDS:
        if not cls.field_in_version(f, version):
            continue
        nullable = f.nullable is not None and f.nullable[0] <= version <= f.nullable[1]
        path = (*prefix, f.attr)
        if f.kind == "struct" and f.struct is not None:
            out.append(Leaf(path, f, nullable))  # the struct itself (null, when it may be)
            out.extend(leaf_fields(f.struct, version, path))
        elif f.kind == "array" and f.struct is not None:
            out.append(Leaf(path, f, nullable))  # the array itself: emptied, doubled
            out.extend(leaf_fields(f.struct, version, (*path, EVERY)))
        else:
            out.append(Leaf(path, f, nullable))
    return out


def hostile_values(leaf: Leaf) -> list[tuple[str, Any]]:
    """(label, value or transform) pairs worth trying for one field."""
    f = leaf.field
    out: list[tuple[str, Any]] = []
    if f.kind in _INT_RANGE:
        lo, hi = _INT_RANGE[f.kind]
        out += [("min", lo), ("minus1", -1), ("max", hi)]
    elif f.kind == "bool":
        out += [("flipped", lambda v: not v)]
    elif f.kind == "float64":
        out += [("nan", float("nan"))]
    elif f.kind == "string":
        out += [("empty", ""), ("long", "x" * 300)]
    elif f.kind == "uuid":
        out += [("random", uuid.UUID(int=0x5EED)), ("zero", uuid.UUID(int=0))]
    elif f.kind in ("bytes", "records"):
        out += [("garbage", b"\xff" * 13), ("empty", b"")]
    elif f.kind == "array" and f.struct is None:
        lo, hi = _INT_RANGE.get(f.elem or "", (0, 0))
        out += [("empty", []), ("impossible", [lo, hi, hi])]
    elif f.kind == "array":
        out += [("empty", []), ("doubled", lambda v: list(v) + list(v))]
    elif f.kind == "struct":
        pass  # its leaves are lied about one by one
    if leaf.nullable:
        out.append(("null", None))
    return out


def _apply(obj: Any, path: Path, value: Any) -> int:
    """Set ``path`` below ``obj``; returns how many places changed."""
    if obj is None:
        return 0
    head, rest = path[0], path[1:]
    if head == EVERY:
        return sum(_apply(item, rest, value) for item in list(obj))
    if not rest:
        current = getattr(obj, head)
        setattr(obj, head, value(current) if callable(value) else value)
        return 1
    return _apply(getattr(obj, head), rest, value)


def lie(path: Path, value: Any, applied: list[int] | None = None) -> Rewrite:
    """A Rewrite that sets ``path`` to ``value`` (or ``value(current)``) in the real answer;
    ``applied`` collects how many places each use changed (0: the answer had none)."""

    def fn(response: Any, frame: bytes) -> Any:
        n = _apply(response, path, value)
        if applied is not None:
            applied.append(n)
        return response

    return Rewrite(fn)


def cases(
    cls: type[Struct], version: int, skip: frozenset[str] = frozenset()
) -> Iterator[tuple[str, Path, Any]]:
    """(id, path, value) for every field and hostile value of ``cls`` at ``version``."""
    for leaf in leaf_fields(cls, version):
        if leaf.path[-1] in skip:
            continue
        for label, value in hostile_values(leaf):
            yield f"{leaf.name}={label}", leaf.path, value
