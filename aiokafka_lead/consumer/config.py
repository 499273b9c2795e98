"""The consumer's configuration, each option declared once (see :mod:`aiokafka_lead.config.options`):
the shared connection settings, then the fetch part (what the fetcher reads), the group part
(what a group member reads) and the consumer's own options.

Under the consumer group protocol (KIP-848) the classic-only keywords
(partition_assignment_strategy, session_timeout_ms, heartbeat_interval_ms) are refused, as
Java refuses them: the broker decides those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aiokafka_lead.config.options import (
    NON_NEGATIVE,
    POSITIVE,
    SYNC_CALLABLE,
    choices,
    option,
    optional,
    override,
)
from aiokafka_lead.errors import KafkaConfigurationError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.requests.offsets import ISOLATION_LEVELS

KT = TypeVar("KT")
VT = TypeVar("VT")

#: consumer keywords only the classic group protocol takes (KIP-848: the broker decides)
CLASSIC_ONLY = ("partition_assignment_strategy", "session_timeout_ms", "heartbeat_interval_ms")
#: the classic defaults when those keywords are not given
CLASSIC_SESSION_TIMEOUT_MS = 10_000
CLASSIC_HEARTBEAT_INTERVAL_MS = 3000


def check_fetch_sizes(fetch_min_bytes: int, fetch_max_bytes: int) -> None:
    """The fetch sizes' cross-option rule (the consumer's and the share consumer's)."""
    if fetch_min_bytes > fetch_max_bytes:
        raise KafkaConfigurationError("fetch_min_bytes must not exceed fetch_max_bytes")


@dataclass(frozen=True, kw_only=True)
class FetchConfig(ConnectionConfig):
    """What the fetcher reads."""

    CLIENT = "consumer"

    client_id: str | None = override(
        ConnectionConfig, "client_id", "aiokafka-lead-consumer", keyword_type="str"
    )
    api_version: str | None = override(ConnectionConfig, "api_version", "auto", keyword_type="str")
    fetch_max_wait_ms: int = option(
        500, NON_NEGATIVE, "how long a broker may hold a fetch for fetch_min_bytes"
    )
    fetch_max_bytes: int = option(52_428_800, POSITIVE, "bytes a fetch answer may hold (all partitions)")
    fetch_min_bytes: int = option(1, NON_NEGATIVE, "bytes a broker waits for before answering a fetch")
    max_partition_fetch_bytes: int = option(1_048_576, POSITIVE, "bytes per partition in a fetch answer")
    isolation_level: str = option(
        "read_uncommitted",
        choices(*ISOLATION_LEVELS),
        "'read_committed' skips aborted transactions' records and stops at the first open one",
    )
    check_crcs: bool = option(True, None, "check every batch's CRC32C")
    client_rack: str | None = option(
        None, None, "this consumer's rack: fetch from a replica there (KIP-392), rack-aware assignment"
    )
    #: KIP-227 incremental fetch sessions (False: every fetch names every partition)
    fetch_sessions: bool = option(True, None, "KIP-227 incremental fetch sessions", keyword=False)

    def _check(self) -> None:
        super()._check()
        check_fetch_sizes(self.fetch_min_bytes, self.fetch_max_bytes)

    @property
    def isolation(self) -> int:
        """``isolation_level`` as sent: 0 (read_uncommitted) or 1 (read_committed)."""
        return ISOLATION_LEVELS[self.isolation_level]


@dataclass(frozen=True, kw_only=True)
class GroupConfig(FetchConfig):
    """What a group member reads (both group protocols)."""

    group_id: str | None = option(None, None, "the consumer group (None: no group, no commits)")
    group_instance_id: str | None = option(
        None, None, "static membership (KIP-345): a restart within the session keeps the assignment"
    )
    enable_auto_commit: bool = option(True, None, "commit consumed positions in the background")
    auto_commit_interval_ms: int = option(5000, POSITIVE, "how often auto-commit commits")
    partition_assignment_strategy: Sequence[Any] | None = option(
        None, None, "classic protocol: the assignors, in preference order (None: range)"
    )
    max_poll_interval_ms: int = option(
        300_000, POSITIVE, "the member leaves the group when the application does not poll this long"
    )
    rebalance_timeout_ms: int | None = option(
        None, optional(POSITIVE), "how long a rebalance waits for members (None: max_poll_interval_ms)"
    )
    session_timeout_ms: int | None = option(
        None, optional(POSITIVE), "classic protocol: a member silent this long is removed (None: 10 s)"
    )
    heartbeat_interval_ms: int | None = option(
        None, optional(POSITIVE), "classic protocol: how often the member heartbeats (None: 3 s)"
    )
    group_protocol: str = option(
        "classic", choices("classic", "consumer"), "'consumer': KIP-848, the broker assigns partitions"
    )
    group_remote_assignor: str | None = option(
        None, None, "consumer protocol: the broker's assignor, 'uniform' or 'range' (None: the broker's)"
    )

    def _check(self) -> None:
        super()._check()
        self._check_group_protocol()
        heartbeat, session = self.heartbeat_interval, self.session_timeout
        if heartbeat >= session:
            raise KafkaConfigurationError(
                f"heartbeat_interval_ms ({heartbeat}) must be lower than "
                f"session_timeout_ms ({session}), as in Java"
            )
        if self.group_instance_id is not None and self.group_id is None:
            raise KafkaConfigurationError("group_instance_id needs a group_id")

    def _check_group_protocol(self) -> None:
        """Java's ConsumerConfig rules: each group protocol refuses the other's settings."""
        if self.group_protocol == "classic":
            if self.group_remote_assignor is not None:
                raise KafkaConfigurationError("group_remote_assignor needs group_protocol='consumer'")
            return
        given = [name for name in CLASSIC_ONLY if getattr(self, name) is not None]
        if given:
            raise KafkaConfigurationError(
                f"{', '.join(given)} cannot be set with group_protocol='consumer': the broker assigns "
                "partitions (see group_remote_assignor) and sets the session timeout and heartbeat interval"
            )

    @property
    def rebalance_timeout(self) -> int:
        return self.rebalance_timeout_ms or self.max_poll_interval_ms

    @property
    def session_timeout(self) -> int:
        return self.session_timeout_ms or CLASSIC_SESSION_TIMEOUT_MS

    @property
    def heartbeat_interval(self) -> int:
        return self.heartbeat_interval_ms or CLASSIC_HEARTBEAT_INTERVAL_MS


@dataclass(frozen=True, kw_only=True)
class ConsumerConfig(GroupConfig):
    """Everything an ``AIOKafkaConsumer`` is configured with."""

    #: the constructor's keyword order, aiokafka's (the other keywords follow in declaration order)
    KEYWORD_ORDER = (
        "bootstrap_servers", "client_id", "group_id", "group_instance_id", "key_deserializer",
        "value_deserializer", "fetch_max_wait_ms", "fetch_max_bytes", "fetch_min_bytes",
        "max_partition_fetch_bytes", "request_timeout_ms", "retry_backoff_ms", "retry_backoff_max_ms",
        "auto_offset_reset", "enable_auto_commit", "auto_commit_interval_ms", "check_crcs",
        "metadata_max_age_ms", "partition_assignment_strategy", "max_poll_interval_ms",
        "rebalance_timeout_ms", "session_timeout_ms", "heartbeat_interval_ms", "consumer_timeout_ms",
        "max_poll_records", "ssl_context", "security_protocol", "api_version",
        "exclude_internal_topics", "connections_max_idle_ms", "isolation_level",
    )
    #: the constructor's docstring
    KEYWORDS_DOC = """aiokafka's keywords, plus ``group_protocol`` ("classic", the default, or "consumer"
    for KIP-848, where the broker assigns partitions) and ``group_remote_assignor`` (the
    broker-side assignor for "consumer": "uniform" or "range"; None: the broker's default),
    and ``allow_auto_create_topics`` (Java's ``allow.auto.create.topics``): True, as aiokafka
    does, lets the metadata requests for subscribed, assigned or looked-up topics create a
    missing one where the brokers allow it; False never creates one.

    Under the consumer protocol the classic-only keywords (partition_assignment_strategy,
    session_timeout_ms, heartbeat_interval_ms) are refused, as Java refuses them: the
    broker decides those.
    """

    key_deserializer: Callable[[bytes], Any] | None = option(
        None, SYNC_CALLABLE, "turns a key's bytes into the key", keyword_type="Callable[[bytes], KT] | None"
    )
    value_deserializer: Callable[[bytes], Any] | None = option(
        None,
        SYNC_CALLABLE,
        "turns a value's bytes into the value",
        keyword_type="Callable[[bytes], VT] | None",
    )
    auto_offset_reset: str = option(
        "latest",
        choices("earliest", "latest", "none"),
        "where to start without a committed offset, or out of range ('none': raise)",
    )
    max_poll_records: int | None = option(None, optional(POSITIVE), "most records one getmany() returns")
    exclude_internal_topics: bool = option(True, None, "a pattern subscription skips internal topics")
    consumer_timeout_ms: int = option(200, None, "accepted as aiokafka's; waits are event-driven")
    allow_auto_create_topics: bool = option(
        True, None, "metadata requests may create a missing topic where the brokers allow it"
    )


__all__ = [
    "CLASSIC_HEARTBEAT_INTERVAL_MS",
    "CLASSIC_SESSION_TIMEOUT_MS",
    "ConsumerConfig",
    "FetchConfig",
    "GroupConfig",
    "check_fetch_sizes",
]
