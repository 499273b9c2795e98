"""The comparison benchmarks' client order moves between runs, for any number of clients."""

from __future__ import annotations

import pytest

from aiokafka_lead.bench.children import client_order


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_every_client_goes_first_and_the_order_is_a_permutation(count: int) -> None:
    kinds = [f"c{i}" for i in range(count)]
    orders = [client_order(kinds, run) for run in range(2 * count)]
    assert all(sorted(order) == kinds for order in orders)
    assert {order[0] for order in orders} == set(kinds)
    assert {order[-1] for order in orders} == set(kinds)


def test_two_clients_swap_places_from_one_run_to_the_next() -> None:
    assert [client_order(["a", "b"], run) for run in range(2)] == [["a", "b"], ["b", "a"]]
