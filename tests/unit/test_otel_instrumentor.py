"""aiokafka_lead.instrumentation.opentelemetry without a broker: what instrument() refuses,
what a traced call has to record with the providers given, and the entry point
opentelemetry-instrument loads (the spans are tested against the real
cluster in tests/integration/test_otel_instrumentation.py)."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NoOpTracerProvider

from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.instrumentation.opentelemetry import AIOKafkaLeadInstrumentor
from aiokafka_lead.instrumentation.opentelemetry.telemetry import Telemetry

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


async def _hook(*_: Any) -> None: ...


@pytest.mark.parametrize(
    ("tracer_provider", "meter_provider", "hook", "quiet"),
    [
        (NoOpTracerProvider(), NoOpMeterProvider(), None, True),
        (NoOpTracerProvider(), NoOpMeterProvider(), _hook, False),  # hooks run per record
        (TracerProvider(), NoOpMeterProvider(), None, False),
        (NoOpTracerProvider(), MeterProvider(), None, False),
    ],
)
def test_what_a_call_records_with_given_providers(
    tracer_provider: Any, meter_provider: Any, hook: Any, quiet: bool
) -> None:
    """Given providers are known for good: nothing to recheck per call; quiet (nothing per
    record but the context passed on) only with no-op providers and no hook."""
    telemetry = Telemetry(tracer_provider, meter_provider, hook, None)
    assert telemetry.settled
    assert telemetry.quiet is quiet
    assert telemetry.tracing is isinstance(tracer_provider, TracerProvider)
    assert telemetry.measuring is isinstance(meter_provider, MeterProvider)
