"""Hypothesis strategies derived from the generated schemas (``_FIELDS``), kept small."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from aiokafka_lead.protocol.schema import Field, Struct

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
_UUIDS = st.one_of(st.just(uuid.UUID(int=0)), st.integers(1, 2**128 - 1).map(lambda i: uuid.UUID(int=i)))
_TEXT = st.text(max_size=4)
_BYTES = st.binary(max_size=6)


def _scalar(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INTS:
        lo, hi = _INTS[kind]
        return st.one_of(st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]), st.integers(lo, hi))
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "string":
        return _TEXT
    if kind in ("bytes", "records"):
        return _BYTES
    if kind == "uuid":
        return _UUIDS
    raise AssertionError(kind)


def _value(f: Field, version: int, depth: int) -> st.SearchStrategy[Any]:
    if f.kind == "struct":
        assert f.struct is not None
        base = struct_strategy(f.struct, version, depth + 1)
    elif f.kind == "array":
        if f.elem == "struct":
            assert f.struct is not None
            elem = struct_strategy(f.struct, version, depth + 1)
        else:
            elem = _scalar(f.elem or "")
        base = st.lists(elem, max_size=2 if depth < 2 else 1)
    else:
        base = _scalar(f.kind)
    nullable = f.nullable is not None and f.nullable[0] <= version <= f.nullable[1]
    return st.one_of(st.none(), base) if nullable else base


def struct_strategy(cls: type[Struct], version: int, depth: int = 0) -> st.SearchStrategy[Any]:
    """Instances whose every field is representable at ``version`` (others stay default)."""
    kwargs = {
        f.attr: _value(f, version, depth) for f in cls._FIELDS if f.versions[0] <= version <= f.versions[1]
    }
    return st.builds(cls, **kwargs)
