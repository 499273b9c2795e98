"""Plumbing of the request layer: retries within a deadline, routing to leaders and the
controller, per-item error reporting."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.client import ClientCore
from aiokafka_lead.errors import (
    KafkaError,
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from aiokafka_lead.retry import call_with_retries
from aiokafka_lead.structs import TopicPartition

T = TypeVar("T")


def raise_item_errors(what: str, failures: Sequence[tuple[str, int, str | None]]) -> None:
    """Raise the first failure's error class, naming every failed item."""
    if not failures:
        return
    detail = "; ".join(
        f"{name}: {type(error_for_code(code)).__name__}{f' ({msg})' if msg else ''}"
        for name, code, msg in failures
    )
    raise error_for_code(failures[0][1], f"{what} failed for {detail}")


def pick_retry_error(errors: Sequence[KafkaError]) -> KafkaError:
    """Of several retriable errors, the one that also asks for a metadata refresh, if any."""
    return next((e for e in errors if e.invalid_metadata), errors[0])


class RequestBase:
    """What every request family needs: the client's core (its configuration included) and
    the retry backoff built from it."""

    _core: ClientCore
    _backoff: ExponentialBackoff

    def __init__(self, core: ClientCore) -> None:
        self._core = core
        self._backoff = core.backoff

    @property
    def _request_timeout_ms(self) -> int:
        return self._core.config.request_timeout_ms

    async def _retrying(self, what: str, attempt: Callable[[], Awaitable[T]], timeout_ms: float | None) -> T:
        return await call_with_retries(
            what,
            attempt,
            timeout_ms=self._request_timeout_ms if timeout_ms is None else timeout_ms,
            backoff=self._backoff,
            refresh=self._core.refresh_metadata,
        )

    async def _send_any(self, request: Any) -> Any:
        return await (await self._core.any_connection()).send(request)

    async def _send_to_controller(self, request: Any) -> Any:
        """Send to the controller Metadata names (in KRaft, a broker that forwards)."""
        node = self._core.store.controller_id
        if node < 0 or self._core.store.node(node) is None:
            return await self._send_any(request)
        return await self._core.send(node, request)

    def _group_by_leader(self, partitions: Sequence[TopicPartition]) -> dict[int, list[TopicPartition]]:
        """Partitions per leader node; an unknown leader raises a retriable, refreshing error."""
        out: dict[int, list[TopicPartition]] = {}
        missing = []
        for tp in partitions:
            leader = self._core.store.leader_for(tp)
            if leader is None:
                missing.append(tp)
            else:
                out.setdefault(leader.node_id, []).append(tp)
        if missing and not out:
            store = self._core.store
            unknown = sorted({tp.topic for tp in missing if store.partitions_for_topic(tp.topic) is None})
            if unknown:  # retriable (a new topic propagates): the caller's deadline still applies
                raise UnknownTopicOrPartitionError(
                    f"topic(s) {', '.join(map(repr, unknown))} not in the cluster's metadata "
                    "(not created yet, or deleted)"
                )
            absent = [t for t in missing if t.partition not in (store.partitions_for_topic(t.topic) or ())]
            if absent:
                raise UnknownTopicOrPartitionError(f"no such partition(s): {absent[:5]}")
            raise LeaderNotAvailableError(f"no known leader for {missing[:5]}")
        return out
