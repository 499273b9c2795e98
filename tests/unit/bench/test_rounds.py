"""The demo's interleaved rounds: ABBA order and the verdict on a difference."""

from __future__ import annotations

import pytest

from aiokafka_lead.bench.rounds import abba_order, compare


def test_each_mode_goes_first_equally_often() -> None:
    assert abba_order(3, ("on", "off")) == ["on", "off", "off", "on", "on", "off"]
    order = abba_order(4, ("a", "b"))
    firsts = [order[i] for i in range(0, len(order), 2)]
    assert firsts.count("a") == firsts.count("b") == 2


def test_a_difference_every_pair_agrees_on_is_clear() -> None:
    result = compare([100, 120, 90], [300, 250, 400])
    assert result.clear
    assert result.a.median == 100 and (result.a.low, result.a.high) == (90, 120)
    text = result.verdict("hints on", "hints off", "p99.9 latency")
    assert "hints on is faster in every pair" in text
    assert "100 ms (90-120)" in text and "300 ms (250-400)" in text


def test_pairs_that_disagree_are_reported_as_noise() -> None:
    result = compare([100, 500, 90], [300, 250, 400])
    assert not result.clear
    assert "inside the noise" in result.verdict("hints on", "hints off", "p99.9 latency")


def test_one_pair_is_never_called_clear() -> None:
    result = compare([100], [300])
    assert not result.clear
    assert "run more rounds" in result.verdict("on", "off", "max")


def test_rounds_must_pair_up() -> None:
    with pytest.raises(ValueError, match="same, non-zero number of rounds"):
        compare([1.0, 2.0], [1.0])
