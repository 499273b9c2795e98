"""An option is declared once: its default, its rule and a one-line description.

The client configurations (:class:`~aiokafka_lead.network.config.ConnectionConfig` and the
producer's, consumer's and admin client's, which extend it) are frozen dataclasses whose
fields are declared with :func:`option`. From that one declaration come

* the default (the dataclass field's default; each client constructor's signature carries
  the same default, which ``tests/unit/test_config.py`` checks);
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


def option(default: T, rule: Rule | None, doc: str, *, keyword: bool = True, secret: bool = False) -> T:
    """Declare a configuration field: its default, its rule (None: any value) and what it does.

    ``keyword=False``: a setting of the configuration object that no client constructor
    takes (internal, or derived from other options). ``secret=True``: never shown in the
    configuration's repr (passwords, token sources)."""
    return dataclasses.field(
        default=default,
        repr=not secret,
        metadata={"rule": rule, "doc": doc, "keyword": keyword, "secret": secret},
    )


def override(base: type, name: str, default: T) -> T:
    """``base``'s declaration of ``name`` with another default (one client's own default)."""
    declared = base.__dataclass_fields__[name]  # type: ignore[attr-defined]
    meta = declared.metadata
    return option(default, meta["rule"], meta["doc"], keyword=meta["keyword"], secret=meta["secret"])


@dataclass(frozen=True)
class Declared:
    """One option as declared: what the generated reference and the signature test read."""

    name: str
    default: Any
    rule: Rule | None
    doc: str
    owner: type


class Options:
    """Base of the configuration dataclasses: builds and validates from keyword arguments."""

    #: how the client is named in "unsupported <client> options: ..."
    CLIENT: ClassVar[str] = "client"

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
            out.append(Declared(f.name, f.default, f.metadata["rule"], f.metadata["doc"], owner))
        return out

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
