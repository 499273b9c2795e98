"""The optional C extension, and the wheel's contents; everything else is in pyproject.toml.

``optional=True``: without a C compiler the install still succeeds and the pure-Python
loops are used (``aiokafka_lead.records.native.unavailable_reason`` says why).

The modules listed under ``[tool.aiokafka_lead] harness-only`` in pyproject.toml (this
repository's benchmarks, demo, image builder, Toxiproxy, chaos and the jar cluster's
command line) stay out of the wheel: they run from a checkout (docs/DESIGN.md, "What the
wheel carries").
"""

import tomllib
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HARNESS_ONLY = tuple(
    tomllib.loads((Path(__file__).parent / "pyproject.toml").read_text())["tool"]["aiokafka_lead"][
        "harness-only"
    ]
)


def harness_only(module: str) -> bool:
    """``module`` (dotted) is one of the harness-only modules or inside one of its packages."""
    return any(module == name or module.startswith(name + ".") for name in HARNESS_ONLY)


class BuildPy(build_py):
    """build_py without the harness-only modules."""

    def find_package_modules(self, package, package_dir):  # type: ignore[no-untyped-def]
        found = super().find_package_modules(package, package_dir)
        return [(pkg, mod, path) for pkg, mod, path in found if not harness_only(f"{pkg}.{mod}")]


setup(
    cmdclass={"build_py": BuildPy},
    ext_modules=[
        Extension(
            "aiokafka_lead._speedups",
            [
                "aiokafka_lead/_speedups.c",
                "aiokafka_lead/_speedups_producer.c",
                "aiokafka_lead/_speedups_producer_columns.c",
                "aiokafka_lead/_speedups_send.c",
                "aiokafka_lead/_speedups_share.c",
                "aiokafka_lead/_speedups_columns.c",
                "aiokafka_lead/_speedups_produce_wire.c",
            ],
            depends=["aiokafka_lead/_speedups_producer.h"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
    ],
)
