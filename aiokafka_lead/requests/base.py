"""Plumbing of the request layer: retries within a deadline, routing to leaders and the
controller, per-item error reporting."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from aiokafka_lead.backoff import ExponentialBackoff
from aiokafka_lead.core.client import ClientCore
from aiokafka_lead.core.retry import call_with_retries
from aiokafka_lead.errors import (
    KafkaError,
    KafkaProtocolError,
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from aiokafka_lead.network.connection import request_broker
from aiokafka_lead.structs import TopicPartition

T = TypeVar("T")


def answered_by() -> str:
    """The broker the current task's last request went to (``request_broker``), for errors."""
    return request_broker.get() or "a broker"


def answer_error(code: int, what: str, message: str | None = None) -> KafkaError:
    """The error of an error code in an answer, naming the API and item (``what``), the broker
    that answered (the current task's last request) and the broker's own message."""
    return error_for_code(code, f"{what} from {answered_by()}{f': {message}' if message else ''}")


def raise_item_errors(
    what: str, failures: Sequence[tuple[str, int, str | None]], *, broker: str | None = None
) -> None:
    """Raise the first failure's error class, naming every failed item and the broker that
    answered (default: the one the current task's last request went to)."""
    if not failures:
        return
    detail = "; ".join(
        f"{name}: {type(error_for_code(code)).__name__}{f' ({msg})' if msg else ''}"
        for name, code, msg in failures
    )
    raise error_for_code(failures[0][1], f"{what} from {broker or answered_by()} failed for {detail}")


def note_item_error(
    failures: list[tuple[str, int, str | None]],
    item: str,
    code: int,
    message: str | None,
    what: str,
    *,
    name_broker: bool = False,
) -> None:
    """An item's error code in an answer: a retriable one is raised (the attempt is made
    again, the error naming the broker that answered), any other kept in ``failures`` (for
    :func:`raise_item_errors` once all was asked); ``name_broker`` names the answering
    broker beside the item (items answered by different brokers, such as groups at their
    coordinators)."""
    err = answer_error(code, what, message)
    if err.retriable:
        raise err
    failures.append((f"{item} at {answered_by()}" if name_broker else item, code, message))


def check_answered(what: str, field: str, asked: Iterable[object], answered: Iterable[object]) -> None:
    """An answer must speak for exactly what was asked: one that leaves something out, or
    answers for something else, is a ``KafkaProtocolError`` (``what`` names the API and the
    broker), never a result with a hole in it."""
    asked_set, answered_set = set(asked), set(answered)
    if asked_set == answered_set:
        return
    missing = sorted(map(str, asked_set - answered_set))
    extra = sorted(map(str, answered_set - asked_set))
    detail = f"has no result for {missing[:5]}" if missing else "answers"
    if extra:
        detail += f"{' and' if missing else ''} for {extra[:5]}, not asked for"
    raise KafkaProtocolError(f"{what}: field '{field}' {detail}")


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
        request_broker.set(None)  # the brokers this operation's errors name are its own
        return await call_with_retries(
            what,
            attempt,
            timeout_ms=self._request_timeout_ms if timeout_ms is None else timeout_ms,
            backoff=self._backoff,
            refresh=self._core.refresh_metadata,
            waiting_on=request_broker.get,
        )

    @property
    def answered_by(self) -> str:
        """The broker the current task's last request went to (for errors)."""
        return answered_by()

    async def _send_any(self, request: Any) -> Any:
        conn = await self._core.any_connection()
        return await conn.send(request)

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
