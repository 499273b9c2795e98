"""A flavour is one of the two packages under test; ``canon`` renders values comparably.

A scenario is written once against a flavour: ``f.pkg`` is ``aiokafka`` or
``aiokafka_lead``, ``f.errors`` / ``f.structs`` / ``f.admin`` / ``f.abc`` ... are its
modules of the same path (imported on first use, so a module missing from one package is
an exception inside that flavour's run, not a crash of the harness).

``canon(f, value, names)`` turns a value into a canonical string: public classes by their
aiokafka name (``TopicPartition(topic='<t:a>', partition=0)``; a class of aiokafka_lead is
named by the name it is exported under that aiokafka also exports),
exceptions as ``raised KafkaTimeoutError``, containers with sets and dicts sorted,
protocol responses (``...Response[_vN]``) by their fields, the scenario's topic and group
names replaced by placeholders. Two outcomes are equal when their strings are.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import re
import types
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

REFERENCE = "aiokafka"
LEAD = "aiokafka_lead"

#: where public names are looked up, most specific module first
PUBLIC_MODULES = (
    "structs",
    "errors",
    "abc",
    "admin",
    "admin.config_resource",
    "admin.new_topic",
    "admin.new_partitions",
    "admin.records_to_delete",
    "producer",
    "consumer",
    "helpers",
    "",
)
_RESPONSE_NAME = re.compile(r"^(\w+Response)(?:_v\d+)?$")


class Flavour:
    """One package under test, with its modules by aiokafka's paths."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Flavour({self.name})"

    def mod(self, path: str = "") -> types.ModuleType:
        return importlib.import_module(f"{self.name}.{path}" if path else self.name)

    @property
    def pkg(self) -> types.ModuleType:
        return self.mod()

    @property
    def errors(self) -> types.ModuleType:
        return self.mod("errors")

    @property
    def structs(self) -> types.ModuleType:
        return self.mod("structs")

    @property
    def admin(self) -> types.ModuleType:
        return self.mod("admin")

    @property
    def abc(self) -> types.ModuleType:
        return self.mod("abc")

    @property
    def helpers(self) -> types.ModuleType:
        return self.mod("helpers")

    @property
    def config_resource(self) -> types.ModuleType:
        return self.mod("admin.config_resource")


FLAVOURS = (Flavour(REFERENCE), Flavour(LEAD))


def _module(package: str, path: str) -> types.ModuleType | None:
    try:
        return importlib.import_module(f"{package}.{path}" if path else package)
    except ImportError:
        return None


@cache
def _exports(package: str) -> dict[int, list[tuple[str, str]]]:
    """id(class) -> [(module path, name)] of every public module of ``package``."""
    out: dict[int, list[tuple[str, str]]] = {}
    for path in PUBLIC_MODULES:
        mod = _module(package, path)
        if mod is None:
            continue
        for name, value in vars(mod).items():
            if isinstance(value, type) and not name.startswith("_"):
                out.setdefault(id(value), []).append((path, name))
    return out


@cache
def public_name(package: str, cls: type) -> str:
    """``cls``'s name as aiokafka spells it.

    A class is named by the name it is exported under (from any public module) that
    aiokafka also exports, so aiokafka's ``errors.NotLeaderForPartitionError`` and our
    ``NotLeaderOrFollowerError`` alias meet on one name. The module a name is imported
    from is not part of it: which module paths export which names is the public-names
    scenario's question. A class without such a name prints as ``<{package}-only ...>``
    or ``<unlisted ...>``."""
    if cls.__module__ == "builtins":
        return cls.__qualname__
    top = cls.__module__.split(".")[0]
    if top not in (REFERENCE, LEAD):
        return f"{cls.__module__}.{cls.__qualname__}"
    exported = _exports(package).get(id(cls), [])
    reference = {name for entries in _exports(REFERENCE).values() for _, name in entries}
    shared = sorted({name for _, name in exported if name in reference})
    if shared:
        # prefer the name aiokafka's own class carries
        own = [n for n in shared if (ref := reference_class(n)) is not None and ref.__name__ == n]
        return (own or shared)[0]
    if exported:
        path, name = exported[0]
        return f"<{package}-only {path or 'pkg'}.{name}>"
    return f"<unlisted {cls.__module__.replace(package, 'pkg', 1)}.{cls.__qualname__}>"


def reference_class(name: str) -> Any:
    """aiokafka's class exported as ``name`` (from any public module), or None."""
    for path in PUBLIC_MODULES:
        mod = _module(REFERENCE, path)
        value = getattr(mod, name, None) if mod is not None else None
        if isinstance(value, type):
            return value
    return None


def exception_name(package: str, exc: BaseException) -> str:
    """``raised Name``; a class no public module exports is named by its nearest base that
    is public (what an ``except`` clause of aiokafka's names catches it as)."""
    for cls in type(exc).__mro__:
        name = public_name(package, cls)
        if not name.startswith("<unlisted"):
            return f"raised {name}"
    return f"raised {public_name(package, type(exc))}"


class Names:
    """Concrete topic / group names of one run and the placeholders they print as."""

    def __init__(self) -> None:
        self.placeholder: dict[str, str] = {}

    def add(self, concrete: str, placeholder: str) -> str:
        self.placeholder[concrete] = placeholder
        return concrete

    def replace(self, text: str) -> str:
        for concrete in sorted(self.placeholder, key=len, reverse=True):
            text = text.replace(concrete, self.placeholder[concrete])
        return text


def _fields(value: Any) -> list[tuple[str, Any]] | None:
    """Field names and values of a record-like object, in declaration order."""
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return list(zip(type(value)._fields, value, strict=True))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(fl.name, getattr(value, fl.name)) for fl in dataclasses.fields(value)]
    return None


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _field_names(cls: Any) -> list[str] | None:
    if isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return list(cls._fields)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        return [fl.name for fl in dataclasses.fields(cls)]
    return None


def canon(package: str, value: Any, names: Names, volatile: Iterable[str] = ()) -> str:
    """The canonical string of ``value`` (see the module docstring)."""
    hide = frozenset(volatile)

    def render(v: Any) -> str:
        if v is None or isinstance(v, bool | _Missing):
            return repr(v)
        if isinstance(v, enum.Enum):
            return repr(v.value)
        if isinstance(v, int):
            return repr(int(v))
        if isinstance(v, float):
            return repr(float(v))
        if isinstance(v, str):
            return repr(names.replace(v))
        if isinstance(v, bytes | bytearray | memoryview):
            return repr(bytes(v))
        if isinstance(v, BaseException):
            return exception_name(package, v)
        if isinstance(v, type):
            return f"class {public_name(package, v)}"
        fields = _fields(v)
        cls_name = public_name(package, type(v))
        if fields is not None and not cls_name.startswith("<"):
            # aiokafka's fields only: extra fields of ours are compared by the structs scenario
            ref = reference_class(cls_name)
            wanted = _field_names(ref) if ref is not None else None
            if wanted is not None:
                have = dict(fields)
                fields = [(k, have.get(k, _MISSING)) for k in wanted]
            return f"{cls_name}({_kv(fields)})"
        if isinstance(v, tuple):  # plain tuples and unexported named tuples alike
            items = [render(x) for x in v]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if isinstance(v, list):
            return f"[{', '.join(render(x) for x in v)}]"
        if isinstance(v, set | frozenset):
            kind = "set" if isinstance(v, set) else "frozenset"
            if not v:
                return f"{kind}()"
            body = ", ".join(sorted(render(x) for x in v))
            return f"{{{body}}}" if kind == "set" else f"frozenset({{{body}}})"
        if isinstance(v, Mapping):
            body = ", ".join(sorted(f"{render(k)}: {render(x)}" for k, x in v.items()))
            return f"{{{body}}}"
        match = _RESPONSE_NAME.match(type(v).__name__)
        if match is not None:
            attrs = [(k, x) for k, x in vars(v).items() if not k.startswith("_")]
            return f"{match.group(1)}({_kv(attrs)})"
        return cls_name

    def _kv(fields: list[tuple[str, Any]]) -> str:
        return ", ".join(f"{k}={'<' + type(x).__name__ + '>' if k in hide else render(x)}" for k, x in fields)

    return render(value)
