"""The committed generated code is exactly what the specs produce (also `make codegen-check`)."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from aiokafka_lead.testing.cluster.jars import clients_jar

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protocol", ROOT / "tools" / "gen_protocol.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_protocol"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_generated_code_is_up_to_date(gen: ModuleType) -> None:
    """Specs come from the pinned kafka-clients jar: nothing outside the clone is needed."""
    jar = clients_jar()
    files = gen.generate(gen.jar_reader(jar))
    assert files == gen.generate(gen.jar_reader(jar))  # deterministic
    stale = [str(p) for p, text in files.items() if not p.exists() or p.read_text() != text]
    assert not stale, f"run tools/gen_protocol.py: {stale[:3]}"
    assert gen.main(["--check", "--jar", str(jar)]) == 0


def test_spec_dir_and_jar_read_the_same(gen: ModuleType, tmp_path: Path) -> None:
    read = gen.jar_reader(clients_jar())
    name = "ApiVersionsRequest.json"
    text = read(name)
    assert text is not None and '"apiKey": 18' in text
    (tmp_path / name).write_text(text)
    assert gen.dir_reader(tmp_path)(name) == text
    assert gen.dir_reader(tmp_path)("NoSuchRequest.json") is None


def test_a_jar_without_specs_is_refused(gen: ModuleType, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jar"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    with pytest.raises(SystemExit, match="not a kafka-clients jar"):
        gen.jar_reader(empty)


def test_snake_case_names(gen: ModuleType) -> None:
    assert gen.snake("CurrentLeader") == "current_leader"
    assert gen.snake("NodeEndpoints") == "node_endpoints"
    assert gen.snake("ThrottleTimeMs") == "throttle_time_ms"
    assert gen.snake("TopicId") == "topic_id"
