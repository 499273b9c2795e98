import random

import pytest

from aiokafka_lead.backoff import ExponentialBackoff


@pytest.mark.parametrize(
    ("attempts", "expected"), [(0, 100), (1, 200), (2, 400), (3, 800), (4, 1000), (50, 1000)]
)
def test_doubles_to_the_cap_without_jitter(attempts: int, expected: float) -> None:
    assert ExponentialBackoff(100, 1000, jitter=0).delay_ms(attempts) == expected


def test_jitter_stays_within_twenty_percent() -> None:
    backoff = ExponentialBackoff(100, 1000, rng=random.Random(7))
    for attempts in range(6):
        base = min(100 * 2**attempts, 1000)
        values = [backoff.delay_ms(attempts) for _ in range(200)]
        assert min(values) >= base * 0.8 - 1e-9
        assert max(values) <= base * 1.2 + 1e-9
        assert max(values) - min(values) > base * 0.2  # really jittered


def test_zero_initial_means_no_backoff() -> None:
    assert ExponentialBackoff(0, 1000).delay_s(3) == 0.0
