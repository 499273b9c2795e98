"""The consumer's configuration, each option declared once (see :mod:`aiokafka_lead.options`):
the shared connection settings, then the fetch part (what the fetcher reads), the group part
(what a group member reads) and the consumer's own options.

Under the consumer group protocol (KIP-848) the classic-only keywords
(partition_assignment_strategy, session_timeout_ms, heartbeat_interval_ms) are refused, as
Java refuses them: the broker decides those.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from aiokafka_lead.abc import AbstractTokenProvider
from aiokafka_lead.errors import KafkaConfigurationError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.options import NON_NEGATIVE, POSITIVE, choices, option, optional, override
from aiokafka_lead.requests.offsets import ISOLATION_LEVELS
from aiokafka_lead.validation import options_of, warn_loop_argument

KT = TypeVar("KT")
VT = TypeVar("VT")

#: consumer keywords only the classic group protocol takes (KIP-848: the broker decides)
CLASSIC_ONLY = ("partition_assignment_strategy", "session_timeout_ms", "heartbeat_interval_ms")
#: the classic defaults when those keywords are not given
CLASSIC_SESSION_TIMEOUT_MS = 10_000
CLASSIC_HEARTBEAT_INTERVAL_MS = 3000


@dataclass(frozen=True, kw_only=True)
class FetchConfig(ConnectionConfig):
    """What the fetcher reads."""

    CLIENT = "consumer"

    client_id: str | None = override(ConnectionConfig, "client_id", "aiokafka-lead-consumer")
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
        if self.fetch_min_bytes > self.fetch_max_bytes:
            raise KafkaConfigurationError("fetch_min_bytes must not exceed fetch_max_bytes")

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

    key_deserializer: Callable[[bytes], Any] | None = option(None, None, "turns a key's bytes into the key")
    value_deserializer: Callable[[bytes], Any] | None = option(
        None, None, "turns a value's bytes into the value"
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


class ConsumerKeywords(Generic[KT, VT]):
    """``AIOKafkaConsumer``'s constructor: aiokafka's keywords, each declared above with the
    same default (``tests/unit/test_config.py`` checks), built into one ConsumerConfig."""

    def __init__(
        self,
        *topics: str,
        bootstrap_servers: str | Sequence[str] = "localhost",
        client_id: str = "aiokafka-lead-consumer",
        group_id: str | None = None,
        group_instance_id: str | None = None,
        key_deserializer: Callable[[bytes], KT] | None = None,
        value_deserializer: Callable[[bytes], VT] | None = None,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52_428_800,
        fetch_min_bytes: int = 1,
        max_partition_fetch_bytes: int = 1_048_576,
        request_timeout_ms: int = 40_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        check_crcs: bool = True,
        metadata_max_age_ms: int = 300_000,
        partition_assignment_strategy: Sequence[Any] | None = None,
        max_poll_interval_ms: int = 300_000,
        rebalance_timeout_ms: int | None = None,
        session_timeout_ms: int | None = None,
        heartbeat_interval_ms: int | None = None,
        consumer_timeout_ms: int = 200,
        max_poll_records: int | None = None,
        ssl_context: ssl.SSLContext | None = None,
        security_protocol: str = "PLAINTEXT",
        api_version: str = "auto",
        exclude_internal_topics: bool = True,
        connections_max_idle_ms: int = 540_000,
        isolation_level: str = "read_uncommitted",
        sasl_mechanism: str = "PLAIN",
        sasl_plain_username: str | None = None,
        sasl_plain_password: str | None = None,
        sasl_oauth_token_provider: AbstractTokenProvider | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        client_rack: str | None = None,
        group_protocol: str = "classic",
        group_remote_assignor: str | None = None,
        allow_auto_create_topics: bool = True,
        loop: Any = None,
        **unsupported: Any,
    ) -> None:
        """aiokafka's keywords, plus ``group_protocol`` ("classic", the default, or "consumer"
        for KIP-848, where the broker assigns partitions) and ``group_remote_assignor`` (the
        broker-side assignor for "consumer": "uniform" or "range"; None: the broker's default),
        and ``allow_auto_create_topics`` (Java's ``allow.auto.create.topics``): True, as aiokafka
        does, lets the metadata requests for subscribed, assigned or looked-up topics create a
        missing one where the brokers allow it; False never creates one.

        Under the consumer protocol the classic-only keywords (partition_assignment_strategy,
        session_timeout_ms, heartbeat_interval_ms) are refused, as Java refuses them: the
        broker decides those.
        """
        warn_loop_argument(loop)
        del loop
        self._configure(topics, ConsumerConfig.build(options_of(locals()), unsupported))

    def _configure(self, topics: tuple[str, ...], config: ConsumerConfig) -> None:
        raise NotImplementedError


__all__ = [
    "CLASSIC_HEARTBEAT_INTERVAL_MS",
    "CLASSIC_SESSION_TIMEOUT_MS",
    "ConsumerConfig",
    "ConsumerKeywords",
    "FetchConfig",
    "GroupConfig",
]
