"""aiokafka_lead.instrumentation.opentelemetry without a broker: what instrument() refuses,
and the entry point opentelemetry-instrument loads (the spans are tested against the real
cluster in tests/integration/test_otel_instrumentation.py)."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path
from typing import Any

import pytest

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.instrumentation.opentelemetry import AIOKafkaLeadInstrumentor

ROOT = Path(__file__).resolve().parents[2]


def test_a_hook_that_is_not_async_is_refused() -> None:
    def hook(*_: Any) -> None: ...

    send = AIOKafkaProducer.__dict__["send"]
    with pytest.raises(TypeError, match="async_produce_hook must be an async function"):
        AIOKafkaLeadInstrumentor().instrument(async_produce_hook=hook)
    assert not AIOKafkaLeadInstrumentor().is_instrumented_by_opentelemetry
    assert AIOKafkaProducer.__dict__["send"] is send


def test_the_opentelemetry_instrument_entry_point_names_the_instrumentor() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    target = project["entry-points"]["opentelemetry_instrumentor"]["aiokafka_lead"]
    module, name = target.split(":")
    assert getattr(importlib.import_module(module), name) is AIOKafkaLeadInstrumentor
    assert "opentelemetry-instrumentation>=0.48b0" in project["optional-dependencies"]["otel"]
