"""``ErrorCode`` names every code of the error table, and the sets read the table's properties."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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
