"""Runs after the scenarios (pytest takes the files in name order): every deliberate
difference in tests/parity/deliberate.py whose scenario ran was observed, so the table
describes only differences that exist."""

from __future__ import annotations

import pytest

from tests.parity.deliberate import DELIBERATE, RAN, SEEN

pytestmark = pytest.mark.integration


def test_every_deliberate_difference_is_still_observed() -> None:
    expected = {entry for entry in DELIBERATE if entry[0] in RAN}
    assert expected - SEEN == set(), "differences listed as deliberate that no scenario shows any more"
