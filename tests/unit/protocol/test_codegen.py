"""The committed generated code is exactly what the specs produce (also `make codegen-check`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
SPEC_DIR = ROOT.parent / "shared" / "kafka-protocol"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protocol", ROOT / "tools" / "gen_protocol.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_protocol"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not SPEC_DIR.is_dir(), reason="Kafka JSON specs not available")
def test_generated_code_is_up_to_date(gen: ModuleType) -> None:
    files = gen.generate(SPEC_DIR)
    assert files == gen.generate(SPEC_DIR)  # deterministic
    stale = [str(p) for p, text in files.items() if not p.exists() or p.read_text() != text]
    assert not stale, f"run tools/gen_protocol.py: {stale[:3]}"
    assert gen.main(["--check", "--spec-dir", str(SPEC_DIR)]) == 0


def test_snake_case_names(gen: ModuleType) -> None:
    assert gen.snake("CurrentLeader") == "current_leader"
    assert gen.snake("NodeEndpoints") == "node_endpoints"
    assert gen.snake("ThrottleTimeMs") == "throttle_time_ms"
    assert gen.snake("TopicId") == "topic_id"
