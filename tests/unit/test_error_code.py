"""``ErrorCode`` names every code of the error table, and the sets read the table's properties."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aiokafka_lead.error_code import INVALID_METADATA_CODES, RETRIABLE_CODES, ErrorCode
from aiokafka_lead.errors import ERROR_CLASSES, error_for_code

ROOT = Path(__file__).resolve().parents[2]


def test_every_table_code_has_its_kafka_name() -> None:
    named = {member.value: member.name for member in ErrorCode if member is not ErrorCode.NONE}
    assert named == {code: cls.error_name for code, cls in ERROR_CLASSES.items()}
    assert ErrorCode.NONE == 0


def test_members_compare_equal_to_wire_ints() -> None:
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6
    assert 6 in {ErrorCode.NOT_LEADER_OR_FOLLOWER}
    assert type(error_for_code(ErrorCode.NOT_LEADER_OR_FOLLOWER)).__name__ == "NotLeaderOrFollowerError"


def test_sets_follow_the_table_properties() -> None:
    assert {c for c, cls in ERROR_CLASSES.items() if cls.retriable} == RETRIABLE_CODES
    assert {c for c, cls in ERROR_CLASSES.items() if cls.invalid_metadata} == INVALID_METADATA_CODES
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER in INVALID_METADATA_CODES
    assert ErrorCode.COORDINATOR_LOAD_IN_PROGRESS in RETRIABLE_CODES
    assert ErrorCode.PRODUCER_FENCED not in RETRIABLE_CODES


def test_generated_module_matches_the_table() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_error_code.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


PACKAGE = ROOT / "aiokafka_lead"
KAFKA_NAMES = "|".join(m.name for m in ErrorCode if m is not ErrorCode.NONE)  # NONE: too common a word
#: a module constant named like a Kafka error and set to a number: ``NOT_COORDINATOR = 16``
DECLARED = re.compile(rf"^\s*({KAFKA_NAMES})\s*=\s*-?\d+\b", re.M)
#: an error code compared with a number: ``error_code == 3``, ``code in (0, 3, 5)``
COMPARED = re.compile(r"\b(error_code|code|errno)\)?\s*(==|!=|not in|in)\s*[({\[]?\s*-?\d")
#: a set of bare codes: ``frozenset({3, 5, 6})``
LITERAL_SET = re.compile(r"frozenset\(\{\s*-?\d")


def test_the_package_names_error_codes() -> None:
    """No error code is written as a number outside the table and the generated codec."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("aiokafka_lead/protocol/generated/") or rel in {
            "aiokafka_lead/_error_codes.py",
            "aiokafka_lead/error_code.py",
        }:
            continue
        text = path.read_text()
        for pattern in (DECLARED, COMPARED, LITERAL_SET):
            found += [f"{rel}: {m.group(0).strip()}" for m in pattern.finditer(text)]
    assert not found, "\n".join(found)


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_error_code", ROOT / "tools" / "gen_error_code.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_classes_module_is_written_from_the_table() -> None:
    gen = _generator()
    rows = gen.read_table()
    assert (ROOT / "aiokafka_lead" / "_error_codes.py").read_text() == gen.classes_module(rows)
    # a changed row changes the module, so ``--check`` sees the drift
    assert gen.classes_module(rows[1:]) != gen.classes_module(rows)


def test_a_malformed_table_line_is_named(tmp_path: Path) -> None:
    gen = _generator()
    table = tmp_path / "table.txt"
    table.write_text(
        "# comment\n3  UNKNOWN_TOPIC_OR_PARTITION  UnknownTopicOrPartitionError  -  retriable,stale\n"
    )
    with pytest.raises(SystemExit, match=r"table\.txt:2: unknown flag \['stale'\]"):
        gen.read_table(table)
    table.write_text("3  UNKNOWN_TOPIC_OR_PARTITION\n")
    with pytest.raises(SystemExit, match=r"table\.txt:1: expected 5 columns, found 2"):
        gen.read_table(table)
