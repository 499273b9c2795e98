"""The request log: every request any fake broker received, in arrival order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, overload


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One received request (logged before interceptors and handlers see it).

    ``request`` is the decoded body, or ``None`` for a version the broker does not advertise.
    """

    time: float  # time.monotonic() at arrival
    node_id: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: Any


class RequestLog:
    """The records in arrival order (indexable, iterable) with counting helpers."""

    def __init__(self) -> None:
        self._entries: list[RequestRecord] = []

    def append(self, record: RequestRecord) -> None:
        self._entries.append(record)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[RequestRecord]:
        return iter(self._entries)

    @overload
    def __getitem__(self, index: int) -> RequestRecord: ...
    @overload
    def __getitem__(self, index: slice) -> list[RequestRecord]: ...
    def __getitem__(self, index: int | slice) -> RequestRecord | list[RequestRecord]:
        return self._entries[index]

    def __repr__(self) -> str:
        return f"RequestLog({len(self._entries)} requests)"

    def count(
        self,
        api_key: int | None = None,
        node_id: int | None = None,
        since: float | None = None,
    ) -> int:
        return sum(1 for r in self.select(api_key, node_id, since))

    def select(
        self,
        api_key: int | None = None,
        node_id: int | None = None,
        since: float | None = None,
    ) -> list[RequestRecord]:
        """Entries matching every given filter (``since`` is a monotonic timestamp)."""
        return [
            r
            for r in self._entries
            if (api_key is None or r.api_key == api_key)
            and (node_id is None or r.node_id == node_id)
            and (since is None or r.time >= since)
        ]
