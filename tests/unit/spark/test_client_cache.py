"""The worker's client cache: one started client per key across tasks, dropped after a failure."""

from __future__ import annotations

import pytest

from aiokafka_lead.spark.bridge import ClientCache


class Client:
    def __init__(self, fail_start: bool = False) -> None:
        self.fail_start = fail_start
        self.started = self.stopped = 0

    async def start(self) -> None:
        if self.fail_start:
            raise ConnectionError("no broker")
        self.started += 1

    async def stop(self) -> None:
        self.stopped += 1


def test_a_key_gets_one_client_until_it_is_dropped() -> None:
    cache = ClientCache()
    made: list[Client] = []

    def make() -> Client:
        made.append(Client())
        return made[-1]

    _, first = cache.get(("consumer", "a"), make)
    _, again = cache.get(("consumer", "a"), make)
    _, other = cache.get(("consumer", "b"), make)
    assert first is again and other is not first and len(made) == 2 and len(cache) == 2
    assert first.started == 1 and first.stopped == 0
    cache.drop(("consumer", "a"))
    assert first.stopped == 1 and len(cache) == 1
    _, fresh = cache.get(("consumer", "a"), make)
    assert fresh is not first and fresh.started == 1
    cache.close_all()
    assert fresh.stopped == other.stopped == 1 and len(cache) == 0


def test_a_client_that_does_not_start_is_not_kept() -> None:
    cache = ClientCache()
    with pytest.raises(ConnectionError, match="no broker"):
        cache.get("k", lambda: Client(fail_start=True))
    assert len(cache) == 0
    _, client = cache.get("k", Client)
    assert client.started == 1
    cache.close_all()
