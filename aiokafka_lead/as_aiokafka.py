"""Run code that imports ``aiokafka`` on aiokafka_lead (opt-in; docs/migrating.md, "Frameworks").

After :func:`install`, ``import aiokafka`` and ``import aiokafka.X.Y`` give the modules
``aiokafka_lead`` and ``aiokafka_lead.X.Y`` themselves (``aiokafka.AIOKafkaProducer is
aiokafka_lead.AIOKafkaProducer``), also when the real aiokafka is installed beside it.
Nothing else changes: ``aiokafka_lead``'s own modules keep their names, and code that does
not call :func:`install` sees the real aiokafka. :func:`uninstall` undoes it for later
imports (modules that already hold the aliased names keep them).

As a program, it runs a module or a script with the alias installed first::

    python -m aiokafka_lead.as_aiokafka -m faststream run app:app
    python -m aiokafka_lead.as_aiokafka -m pytest tests/
    python -m aiokafka_lead.as_aiokafka service.py --its-options

and as a pytest plugin, ``pytest -p aiokafka_lead.testing.aiokafka_alias``, for a test
suite written against aiokafka, run unchanged.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import runpy
import sys
from collections.abc import Sequence
from types import ModuleType

ALIAS = "aiokafka"
TARGET = "aiokafka_lead"


def _target_name(fullname: str) -> str | None:
    """``aiokafka.x.y`` -> ``aiokafka_lead.x.y``; None for other names."""
    if fullname == ALIAS:
        return TARGET
    if fullname.startswith(ALIAS + "."):
        return TARGET + fullname[len(ALIAS) :]
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a placeholder: exec_module puts the real module in its place

    def exec_module(self, module: ModuleType) -> None:
        # The import system returns what sys.modules holds for the name after exec_module:
        # aiokafka_lead's module itself, its own __name__ and __spec__ untouched.
        sys.modules[module.__name__] = importlib.import_module(self.target)


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        name = _target_name(fullname)
        if name is None:
            return None
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: aiokafka_lead stands in for aiokafka "
                f"(aiokafka_lead.as_aiokafka) and has no {name!r}",
                name=fullname,
            )
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(name), is_package=True)


_FINDER = _AliasFinder()


def installed() -> bool:
    """Is the alias in place?"""
    return _FINDER in sys.meta_path


def install() -> None:
    """Make ``import aiokafka`` (and its submodules) resolve to aiokafka_lead from now on.

    Call it before anything imports aiokafka: a real aiokafka module already imported is
    an error (the code that imported it would keep it), named in the message."""
    if installed():
        return
    loaded = sorted(
        name
        for name, module in sys.modules.items()
        if _target_name(name) is not None and not _is_ours(module)
    )
    if loaded:
        raise RuntimeError(
            f"the real aiokafka is already imported ({', '.join(loaded[:3])}"
            f"{', ...' if len(loaded) > 3 else ''}): call aiokafka_lead.as_aiokafka.install() "
            "before importing anything that imports aiokafka"
        )
    sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Undo :func:`install`: later imports of aiokafka find the real one (if installed)."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n, m in sys.modules.items() if _target_name(n) is not None and _is_ours(m)]:
        del sys.modules[name]


def _is_ours(module: ModuleType | None) -> bool:
    name = getattr(module, "__name__", "")
    return isinstance(name, str) and (name == TARGET or name.startswith(TARGET + "."))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m aiokafka_lead.as_aiokafka (-m MODULE | SCRIPT) [ARGS...]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: python -m aiokafka_lead.as_aiokafka (-m MODULE | SCRIPT) [ARGS...]"
    if not args or args[0] in ("-h", "--help") or (args[0] == "-m" and len(args) < 2):
        print(usage, file=sys.stderr)
        return 2
    install()
    if args[0] == "-m":
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    # run as a program, this file is __main__: install the finder of the importable module,
    # so that one alias exists whichever name code reaches it by
    from aiokafka_lead.as_aiokafka import main as _main

    sys.exit(_main())
