"""The comparison benchmarks' client order moves between runs, for any number of clients; the
clients' package is compiled once, as an installed wheel's is."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiokafka_lead.bench.children import client_order, compile_bytecode


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_every_client_goes_first_and_the_order_is_a_permutation(count: int) -> None:
    kinds = [f"c{i}" for i in range(count)]
    orders = [client_order(kinds, run) for run in range(2 * count)]
    assert all(sorted(order) == kinds for order in orders)
    assert {order[0] for order in orders} == set(kinds)
    assert {order[-1] for order in orders} == set(kinds)


def test_two_clients_swap_places_from_one_run_to_the_next() -> None:
    assert [client_order(["a", "b"], run) for run in range(2)] == [["a", "b"], ["b", "a"]]


def test_compile_bytecode_writes_each_checkouts_bytecode(tmp_path: Path) -> None:
    package = tmp_path / "aiokafka_lead"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("X = 1\n")
    (package / "sub" / "mod.py").write_text("Y = 2\n")
    compile_bytecode(tmp_path, None)
    assert sorted(p.name.split(".")[0] for p in package.rglob("*.pyc")) == ["__init__", "mod"]
