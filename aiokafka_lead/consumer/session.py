"""KIP-227 incremental fetch sessions, one per broker, as sans-I/O bookkeeping.

The first Fetch to a broker is a full one asking for a session (session_id 0, epoch 0).
When the broker grants one, later Fetches name only what changed: partitions that are new
or whose fetch offset, epochs or size limit moved; partitions no longer wanted go in
``forgotten_topics_data``. Partitions left out are fetched from where the broker last
had them, and the response lists only partitions with news (data, errors, watermark
moves). Any session error, connection failure or unexpected answer resets to a full
fetch, which is always correct, just bigger.

Only the fetcher's regular fetch (one in flight per node) uses the session: sessions need
strictly sequential epochs. The extra no-wait fetch after a leader move is sessionless.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.structs import TopicPartition

SESSION_MIN_VERSION = 7
INITIAL_EPOCH = 0
FINAL_EPOCH = -1  # "no session": a plain full fetch
INT32_MAX = 2**31 - 1
#: the broker lost or rejected the fetch session: the next fetch starts a new one
SESSION_ERRORS = frozenset({
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
    ErrorCode.INVALID_FETCH_SESSION_EPOCH,
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
})


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    """What one Fetch says about one partition; equal values need not be sent again."""

    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    partition_max_bytes: int


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """One request's session fields, the partitions to name, and those to forget."""

    session_id: int
    session_epoch: int
    to_send: dict[TopicPartition, PartitionFetch]
    forgotten: tuple[TopicPartition, ...]
    wanted: dict[TopicPartition, PartitionFetch]

    @property
    def full(self) -> bool:
        return self.session_id == 0


class FetchSession:
    """The client side of one broker's fetch session."""

    def __init__(self) -> None:
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self._state: dict[TopicPartition, PartitionFetch] = {}
        #: the Fetch version the session was made with (topic ids or names): a change resets
        self.version = -1
        self.full_fetches = 0
        self.incremental_fetches = 0

    def plan(self, wanted: dict[TopicPartition, PartitionFetch]) -> SessionPlan:
        if self.session_id == 0:
            self.full_fetches += 1
            return SessionPlan(0, INITIAL_EPOCH, dict(wanted), (), dict(wanted))
        self.incremental_fetches += 1
        to_send = {tp: f for tp, f in wanted.items() if self._state.get(tp) != f}
        forgotten = tuple(tp for tp in self._state if tp not in wanted)
        return SessionPlan(self.session_id, self.epoch, to_send, forgotten, dict(wanted))

    def on_response(self, plan: SessionPlan, error_code: int, session_id: int) -> None:
        """Advance after a response to ``plan`` (call before acting on its partitions)."""
        if error_code:
            self.reset()
            return
        if plan.full:
            self.session_id = session_id
            self.epoch = 1 if session_id else INITIAL_EPOCH
        elif session_id != self.session_id:
            self.reset()  # the broker moved us to another session: start over, fully
            return
        else:
            self.epoch = 1 if self.epoch >= INT32_MAX else self.epoch + 1
        self._state = dict(plan.wanted) if self.session_id else {}

    def reset(self) -> None:
        """Next request is full: after an error, a lost connection or a cancelled fetch."""
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self._state = {}
