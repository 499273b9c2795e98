"""Writes each client's constructor keywords from the option declarations (``--check``: fail if
a generated file is stale).

Every client option is declared once, in the configuration classes (``option(default, rule,
doc)``); the ``*Keywords`` class a public client inherits its constructor from is generated
from those declarations: one keyword per keyword option, with the declared default and the
field's annotation (or the ``keyword_type`` declared for the constructor), in the class's
``KEYWORD_ORDER`` (the options it does not name follow in declaration order), under the
class's ``KEYWORDS_DOC``. Type checkers and ``inspect.signature`` see the full signature.

    python tools/gen_keywords.py           # rewrite aiokafka_lead/*/keywords.py
    python tools/gen_keywords.py --check   # exit 1 if one differs from the declarations
"""

from __future__ import annotations

import argparse
import builtins
import inspect
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiokafka_lead.admin.config import AdminConfig  # noqa: E402
from aiokafka_lead.config.options import Options  # noqa: E402
from aiokafka_lead.consumer.config import ConsumerConfig  # noqa: E402
from aiokafka_lead.producer.config import ProducerConfig  # noqa: E402
from aiokafka_lead.share.config import ShareConsumerConfig  # noqa: E402


@dataclass(frozen=True)
class Client:
    """One generated constructor: its class, the configuration it builds and how it is called."""

    keywords: str
    config: type[Options]
    public: str
    #: takes ``*topics: str`` first (the consumers)
    topics: bool
    #: takes aiokafka's deprecated ``loop=`` (warned about, then ignored)
    loop: bool
    #: the class's type parameters, defined in the configuration's module
    generic: tuple[str, ...] = ()

    @property
    def target(self) -> Path:
        package = self.config.__module__.rsplit(".", 1)[0]
        return ROOT / package.replace(".", "/") / "keywords.py"


CLIENTS = [
    Client("ProducerKeywords", ProducerConfig, "AIOKafkaProducer", topics=False, loop=True),
    Client("ConsumerKeywords", ConsumerConfig, "AIOKafkaConsumer", True, True, ("KT", "VT")),
    Client("AdminKeywords", AdminConfig, "the admin clients", topics=False, loop=False),
    Client("ShareConsumerKeywords", ShareConsumerConfig, "AIOKafkaShareConsumer", True, False, ("KT", "VT")),
]

NAME = re.compile(r"[A-Za-z_]\w*")


def _literal(value: Any) -> str:
    """A default as source (the kinds an option's default may be)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return f"{value:_}" if value >= 10_000 else str(value)
    if isinstance(value, str) and value.isascii() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    raise TypeError(f"no source form for the default {value!r}")


class Imports:
    """The import lines a generated module needs, grouped and ordered as ruff's isort does."""

    def __init__(self) -> None:
        self.modules: set[str] = set()
        self.names: dict[str, set[str]] = {}

    def add(self, module: str, name: str) -> None:
        self.names.setdefault(module, set()).add(name)

    def resolve(self, annotation: str, module: str) -> None:
        """Import each name ``annotation`` uses from where it is defined (a name bound to an
        alias, a TypeVar or a type defined there, from ``module``, the declaring one)."""
        scope = vars(sys.modules[module])
        for name in NAME.findall(re.sub(r"\.\w+", "", annotation)):
            if name in ("None",) or (name not in scope and hasattr(builtins, name)):
                continue
            value = scope[name]
            if isinstance(value, types.ModuleType):
                self.modules.add(value.__name__)
                continue
            home = getattr(value, "__module__", None)
            if home and getattr(sys.modules.get(home), name, None) is value:
                self.add(home, name)
            else:
                self.add(module, name)

    def lines(self) -> list[str]:
        def section(module: str) -> int:
            return 0 if module.split(".", maxsplit=1)[0] in sys.stdlib_module_names else 1

        def by_type(name: str) -> tuple[int, str]:
            return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

        out = ["from __future__ import annotations"]
        for group in (0, 1):
            block = [f"import {m}" for m in sorted(self.modules) if section(m) == group]
            block += [
                f"from {m} import {', '.join(sorted(self.names[m], key=by_type))}"
                for m in sorted(self.names)
                if section(m) == group
            ]
            if block:
                out += ["", *block]
        return out


def _docstring(text: str, indent: str) -> list[str]:
    lines = inspect.cleandoc(text).splitlines()
    body = [f"{indent}{line}" if line else "" for line in lines[1:]]
    return [f'{indent}"""{lines[0]}', *body, f'{indent}"""']


def render(client: Client) -> str:
    config = client.config
    module = config.__module__
    imports = Imports()
    imports.add(module, config.__name__)
    imports.add("typing", "Any")
    imports.add("aiokafka_lead.config.validation", "options_of")
    params = ["        self,", "        *topics: str," if client.topics else "        *,"]
    for d in config.keywords():
        imports.resolve(d.annotation, d.module)
        params.append(f"        {d.name}: {d.annotation} = {_literal(d.default)},")
    body = []
    if client.loop:
        imports.add("aiokafka_lead.config.validation", "warn_loop_argument")
        params.append("        loop: Any = None,")
        body = ["        warn_loop_argument(loop)", "        del loop"]
    params.append("        **unsupported: Any,")
    bases = ""
    if client.generic:
        imports.add("typing", "Generic")
        for name in client.generic:
            imports.add(module, name)
        bases = f"(Generic[{', '.join(client.generic)}])"
    topics = "topics, " if client.topics else ""
    topics_param = "topics: tuple[str, ...], " if client.topics else ""
    where = f"{module}.{config.__name__}"
    lines = [
        f"# GENERATED by tools/gen_keywords.py from {config.__name__}'s declarations: do not edit by hand.",
        f'"""The constructor keywords of {client.public}: one per keyword option of',
        f":class:`~{where}`, with its default and type, built into one",
        f'{config.__name__} (``python tools/gen_keywords.py`` rewrites this file)."""',
        "",
        *imports.lines(),
        "",
        "",
        f"class {client.keywords}{bases}:",
        f'    """The constructor of {client.public}: the keyword options of ``{config.__name__}``."""',
        "",
        "    def __init__(",
        *params,
        "    ) -> None:",
        *(_docstring(config.KEYWORDS_DOC, "        ") if config.KEYWORDS_DOC else []),
        *body,
        f"        self._configure({topics}{config.__name__}.build(options_of(locals()), unsupported))",
        "",
        f"    def _configure(self, {topics_param}config: {config.__name__}) -> None:",
        "        raise NotImplementedError",
        "",
        "",
        f'__all__ = ["{client.keywords}"]',
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file is stale")
    args = parser.parse_args(argv)
    stale = []
    for client in CLIENTS:
        text = render(client)
        if args.check:
            if not client.target.exists() or client.target.read_text() != text:
                stale.append(str(client.target.relative_to(ROOT)))
        else:
            client.target.write_text(text)
    if stale:
        print(f"{', '.join(stale)} stale: run python tools/gen_keywords.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
