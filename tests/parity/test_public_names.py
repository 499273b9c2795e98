"""aiokafka's public names at aiokafka's module paths (what ``from aiokafka.x import Y``
imports), looked up in each flavour: the outcome lists the names a module lacks."""

from __future__ import annotations

import importlib
import types

import pytest

from tests.parity.flavour import REFERENCE, Flavour
from tests.parity.harness import Context, scenario

pytestmark = pytest.mark.integration

MODULES = (
    "",
    "abc",
    "admin",
    "admin.config_resource",
    "admin.new_partitions",
    "admin.new_topic",
    "admin.records_to_delete",
    "errors",
    "structs",
    "helpers",
    "producer",
    "consumer",
    "coordinator.assignors.roundrobin",
    "coordinator.assignors.range",
    "coordinator.assignors.sticky.sticky_assignor",
    "coordinator.assignors.abstract",
)


def reference_names(path: str) -> list[str]:
    """``__all__`` of aiokafka's module, plus the classes and functions it defines."""
    module = importlib.import_module(f"{REFERENCE}.{path}" if path else REFERENCE)
    names = set(getattr(module, "__all__", ()))
    for name, value in vars(module).items():
        defined_here = isinstance(value, type | types.FunctionType) and value.__module__ == module.__name__
        if defined_here and not name.startswith("_"):
            names.add(name)
    return sorted(names)


@scenario
async def test_public_names(f: Flavour, ctx: Context) -> None:
    for path in MODULES:
        try:
            module = f.mod(path)
        except ImportError:
            ctx.out(f"{path or 'package'}: missing", "the whole module")
            continue
        ctx.out(f"{path or 'package'}: missing", [n for n in reference_names(path) if not hasattr(module, n)])
