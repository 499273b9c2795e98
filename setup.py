"""Only the optional C extension lives here; everything else is in pyproject.toml.

``optional=True``: without a C compiler the install still succeeds and the pure-Python
loops are used (``aiokafka_lead.records.native.unavailable_reason`` says why).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "aiokafka_lead._speedups",
            ["aiokafka_lead/_speedups.c", "aiokafka_lead/_speedups_producer.c"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
    ]
)
