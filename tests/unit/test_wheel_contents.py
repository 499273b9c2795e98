"""What the wheel carries: the harness-only modules (pyproject.toml, ``[tool.aiokafka_lead]``)
are left out by setup.py, so nothing shipped may need them, and the pytest plugin a user
gets registers fixtures only."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import aiokafka_lead.testing.pytest_plugin as plugin

ROOT = Path(__file__).resolve().parents[2]
HARNESS_ONLY = tuple(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["aiokafka_lead"]["harness-only"]
)


def harness_only(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in HARNESS_ONLY)


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, int, bool]]:
    """(imported module, line, guarded by a presence check) of every import in ``tree``."""
    out: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.If) and "_present" in ast.unparse(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, guarded)
            return
        if isinstance(node, ast.Import):
            out.extend((a.name, node.lineno, guarded) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, *([base] if base else [])])
            out.append((base, node.lineno, guarded))
            out.extend((f"{base}.{a.name}", node.lineno, guarded) for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return out


def test_the_harness_only_modules_exist() -> None:
    for name in HARNESS_ONLY:
        path = ROOT / Path(*name.split("."))
        assert path.is_dir() or path.with_suffix(".py").is_file(), name


def test_nothing_shipped_needs_a_harness_only_module() -> None:
    """A shipped module importing one would fail in an installed wheel; the CLI offers its
    harness commands only after checking they are present (``_present``)."""
    bad = []
    for path in sorted((ROOT / "aiokafka_lead").rglob("*.py")):
        module = _module(path)
        if harness_only(module):
            continue
        tree = ast.parse(path.read_text())
        for imported, line, guarded in _imports(tree, module, path.name == "__init__.py"):
            if harness_only(imported) and not guarded:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    assert bad == []


def test_the_pytest_plugin_registers_fixtures_only() -> None:
    hooks = sorted(name for name in vars(plugin) if name.startswith("pytest_"))
    assert hooks == []
    fixtures = sorted(
        name
        for name, value in vars(plugin).items()
        if hasattr(value, "_pytestfixturefunction") or type(value).__name__ == "FixtureFunctionDefinition"
    )
    assert fixtures == [
        "kafka_bootstrap",
        "kafka_cluster",
        "kafka_cluster_1",
        "kafka_container",
        "kafka_node_control",
        "schema_registry_url",
    ]
