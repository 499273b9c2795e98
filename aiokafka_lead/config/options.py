"""An option is declared once: its default, its rule and a one-line description.

The client configurations (:class:`~aiokafka_lead.network.config.ConnectionConfig` and the
producer's, consumer's and admin client's, which extend it) are frozen dataclasses whose
fields are declared with :func:`option`. From that one declaration come

* the constructor keyword: each client's ``*Keywords`` class (``*/keywords.py``) is
  generated from the declarations by ``tools/gen_keywords.py``, with the field's default and
  annotation (or the ``keyword_type`` declared for the constructor), in the class's
  ``KEYWORD_ORDER``;
* the validation: :meth:`Options.build` refuses unknown keywords (naming the closest known
  one) and every field's rule runs when the configuration is built, before the cross-option
  rules of the class (``_check``), so a setting that cannot work fails at
  construction with :class:`KafkaConfigurationError`;
* the configuration reference, ``docs/configuration.md`` (``tools/gen_config_docs.py``).

A client builds its configuration once and every part of it reads its settings from that
object.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar, Self, TypeVar

from aiokafka_lead.errors import KafkaConfigurationError

T = TypeVar("T")


@dataclass(frozen=True)
class Rule:
    """What a value must be: ``check(name, value)`` raises KafkaConfigurationError otherwise;
    ``text`` says it in the configuration reference."""

    text: str
    check: Callable[[str, Any], None]


def _number(minimum: float, inclusive: bool) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, Real):
            raise KafkaConfigurationError(f"{name} must be a number, not {value!r}")
        if value < minimum or (value == minimum and not inclusive):
            bound = f">= {minimum}" if inclusive else f"> {minimum}"
            raise KafkaConfigurationError(f"{name} must be {bound}, not {value!r}")

    return check


#: a number > 0 (a timeout, a size, a count)
POSITIVE = Rule("number > 0", _number(0, inclusive=False))
#: a number >= 0
NON_NEGATIVE = Rule("number >= 0", _number(0, inclusive=True))


def is_async_callable(value: Any) -> bool:
    """An ``async def`` function, or an object whose class defines ``async def __call__``
    (the schema-registry serdes)."""
    method = None if inspect.isroutine(value) else inspect.getattr_static(type(value), "__call__", None)
    return inspect.iscoroutinefunction(value) or inspect.iscoroutinefunction(method)


def _not_async(name: str, value: Any) -> None:
    if is_async_callable(value):
        raise KafkaConfigurationError(
            f"{name} is an async callable, but the consumer calls it synchronously: await async "
            "deserializers with aiokafka_lead.schema_registry.DeserializingConsumer (docs/schema-registry.md)"
        )


#: the consumer's deserializers: called synchronously, so never an async callable
SYNC_CALLABLE = Rule("any but an async callable", _not_async)


def optional(rule: Rule) -> Rule:
    """``rule``, or None (not set)."""

    def check(name: str, value: Any) -> None:
        if value is not None:
            rule.check(name, value)

    return Rule(f"{rule.text}, or None", check)


def choices(*values: Any) -> Rule:
    """One of ``values`` (negative integers are accepted but not shown: ``acks=-1``)."""
    shown = ", ".join(repr(c) for c in values if not isinstance(c, int) or c >= 0)

    def check(name: str, value: Any) -> None:
        if value not in values:
            raise KafkaConfigurationError(f"{name} must be one of {shown}; not {value!r}")

    return Rule(f"one of {shown}", check)


def instance_of(*types: type, what: str) -> Rule:
    """An instance of one of ``types`` (``what`` names them in the message)."""

    def check(name: str, value: Any) -> None:
        if not isinstance(value, types):
            raise KafkaConfigurationError(f"{name} must be {what}, not {value!r}")

    return Rule(what, check)


def option(
    default: T,
    rule: Rule | None,
    doc: str,
    *,
    keyword: bool = True,
    secret: bool = False,
    keyword_type: str | None = None,
) -> T:
    """Declare a configuration field: its default, its rule (None: any value) and what it does.

    ``keyword=False``: a setting of the configuration object that no client constructor
    takes (internal, or derived from other options). ``secret=True``: never shown in the
    configuration's repr (passwords, token sources). ``keyword_type``: the constructor
    keyword's annotation where it is not the field's (e.g. the consumer's generic deserializers),
    written as in source and resolved in the declaring module."""
    return dataclasses.field(
        default=default,
        repr=not secret,
        metadata={
            "rule": rule,
            "doc": doc,
            "keyword": keyword,
            "secret": secret,
            "keyword_type": keyword_type,
        },
    )


def override(base: type, name: str, default: T, *, keyword_type: str | None = None) -> T:
    """``base``'s declaration of ``name`` with another default (one client's own default) and,
    given, another constructor annotation."""
    declared = base.__dataclass_fields__[name]  # type: ignore[attr-defined]
    meta = declared.metadata
    return option(
        default,
        meta["rule"],
        meta["doc"],
        keyword=meta["keyword"],
        secret=meta["secret"],
        keyword_type=keyword_type or meta["keyword_type"],
    )


@dataclass(frozen=True)
class Declared:
    """One option as declared: what the generated reference and keywords read."""

    name: str
    default: Any
    rule: Rule | None
    doc: str
    owner: type
    #: the constructor keyword's annotation, as written in source (in ``module``)
    annotation: str
    #: the module the annotation's names are resolved in (the one that declared it)
    module: str


class Options:
    """Base of the configuration dataclasses: builds and validates from keyword arguments."""

    #: how the client is named in "unsupported <client> options: ..."
    CLIENT: ClassVar[str] = "client"
    #: the constructor's keywords that come first, in this order (aiokafka's); the other
    #: keyword options follow in declaration order (``tools/gen_keywords.py``)
    KEYWORD_ORDER: ClassVar[tuple[str, ...]] = ()
    #: the constructor's docstring, if it has one (``tools/gen_keywords.py``)
    KEYWORDS_DOC: ClassVar[str | None] = None

    @classmethod
    def declared(cls) -> list[Declared]:
        """Every keyword option of ``cls`` in declaration order (the first class that declared
        a name owns it)."""
        out = []
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if not f.metadata.get("keyword", False):
                continue
            owner = next(
                c
                for c in reversed(cls.__mro__)
                if f.name in getattr(c, "__annotations__", {}) and dataclasses.is_dataclass(c)
            )
            # the last class to annotate the field: its annotation's names are in its module
            typed = next(c for c in cls.__mro__ if f.name in getattr(c, "__annotations__", {}))
            meta = f.metadata
            annotation = meta["keyword_type"] or str(f.type)
            module = typed.__module__
            out.append(Declared(f.name, f.default, meta["rule"], meta["doc"], owner, annotation, module))
        return out

    @classmethod
    def keywords(cls) -> list[Declared]:
        """The constructor's keywords in its order: ``KEYWORD_ORDER``, then the others in
        declaration order."""
        declared = {d.name: d for d in cls.declared()}
        unknown = [name for name in cls.KEYWORD_ORDER if name not in declared]
        if unknown:
            raise ValueError(f"{cls.__name__}.KEYWORD_ORDER names no keyword option: {unknown}")
        rest = [d for name, d in declared.items() if name not in cls.KEYWORD_ORDER]
        return [declared[name] for name in cls.KEYWORD_ORDER] + rest

    @classmethod
    def build(cls, arguments: Mapping[str, Any], unknown: Mapping[str, Any] | None = None) -> Self:
        """The configuration from a constructor's keywords; ``unknown`` are the ones its
        signature did not take (a TypeError names each, with the closest known name)."""
        known = {f.name for f in dataclasses.fields(cls) if f.metadata.get("keyword")}  # type: ignore[arg-type]
        stray = dict(unknown or {})
        stray.update({k: v for k, v in arguments.items() if k not in known})
        if stray:
            raise TypeError(f"unsupported {cls.CLIENT} options: {_suggest(stray, known)}")
        return cls(**arguments)

    def _check_rules(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            rule = f.metadata.get("rule")
            if rule is not None:
                rule.check(f.name, getattr(self, f.name))

    def __post_init__(self) -> None:
        self._check_rules()
        self._check()

    def _check(self) -> None:
        """The rules that relate several options, run after every option's own rule; each
        configuration class adds its own and calls ``super()._check()`` first."""


def _suggest(unknown: Mapping[str, Any], known: Collection[str]) -> str:
    out = []
    for name in sorted(unknown):
        close = difflib.get_close_matches(name, sorted(known), n=1)
        out.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return ", ".join(out)


__all__ = [
    "NON_NEGATIVE",
    "POSITIVE",
    "Declared",
    "Options",
    "Rule",
    "choices",
    "instance_of",
    "option",
    "optional",
    "override",
]
