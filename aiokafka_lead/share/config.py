"""The share consumer's configuration, each option declared once (see
:mod:`aiokafka_lead.options`): the shared connection settings, the fetch options whose
meaning is the consumer's (their declarations reused from ``FetchConfig`` /
``ConsumerConfig``), then the share consumer's own.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from aiokafka_lead.abc import AbstractTokenProvider
from aiokafka_lead.consumer.config import ConsumerConfig, FetchConfig
from aiokafka_lead.errors import KafkaConfigurationError, KafkaError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.options import Rule, choices, option, override
from aiokafka_lead.share.session import BATCH_OPTIMIZED, RECORD_LIMIT
from aiokafka_lead.structs import TopicPartition
from aiokafka_lead.validation import options_of

KT = TypeVar("KT")
VT = TypeVar("VT")

ACKNOWLEDGEMENT_MODES = ("implicit", "explicit")
#: share_acquire_mode -> ShareAcquireMode as sent (KIP-1206)
ACQUIRE_MODES = {"batch_optimized": BATCH_OPTIMIZED, "record_limit": RECORD_LIMIT}

#: (offsets per partition, error or None): the outcome of acknowledgements sent in the background
AckResult = Callable[[Mapping[TopicPartition, set[int]], KafkaError | None], None]


def _non_empty_string(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise KafkaConfigurationError(
            f"{name} must be a non-empty string: a share consumer always belongs to a share group, "
            f"not {value!r}"
        )


def _positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise KafkaConfigurationError(f"{name} must be a positive int, not {value!r}")


#: the share group (required)
GROUP_ID = Rule("a non-empty string (required)", _non_empty_string)
#: a count sent as an int32
POSITIVE_INT = Rule("int > 0", _positive_int)


@dataclass(frozen=True, kw_only=True)
class ShareConsumerConfig(ConnectionConfig):
    """Everything an ``AIOKafkaShareConsumer`` is configured with."""

    CLIENT = "share consumer"

    client_id: str | None = override(ConnectionConfig, "client_id", "aiokafka-lead-share-consumer")
    group_id: str | None = option(None, GROUP_ID, "the share group (KIP-932) the consumer belongs to")
    key_deserializer: Callable[[bytes], Any] | None = override(ConsumerConfig, "key_deserializer", None)
    value_deserializer: Callable[[bytes], Any] | None = override(ConsumerConfig, "value_deserializer", None)
    acknowledgement_mode: str = option(
        "implicit",
        choices(*ACKNOWLEDGEMENT_MODES),
        "'implicit': the next poll or commit() accepts what the last poll delivered; "
        "'explicit': every delivered record is acknowledged before the next poll",
    )
    share_acquire_mode: str = option(
        "batch_optimized",
        choices(*ACQUIRE_MODES),
        "'record_limit' (KIP-1206): never more than max_poll_records acquired per fetch; "
        "'batch_optimized': the broker may hand out whole batches",
    )
    max_poll_records: int = option(
        500, POSITIVE_INT, "most records one getmany() returns and one share fetch acquires"
    )
    fetch_max_wait_ms: int = override(FetchConfig, "fetch_max_wait_ms", 500)
    fetch_min_bytes: int = override(FetchConfig, "fetch_min_bytes", 1)
    fetch_max_bytes: int = override(FetchConfig, "fetch_max_bytes", 52_428_800)
    client_rack: str | None = option(None, None, "this member's rack, sent when it joins the share group")
    acknowledgement_commit_callback: AckResult | None = option(
        None, None, "called with ({partition: offsets}, error or None) for background acknowledgements"
    )

    def _check(self) -> None:
        super()._check()
        if self.fetch_min_bytes > self.fetch_max_bytes:
            raise KafkaConfigurationError("fetch_min_bytes must not exceed fetch_max_bytes")

    @property
    def group(self) -> str:
        """``group_id`` (its rule made sure it is a non-empty string)."""
        assert self.group_id is not None
        return self.group_id

    @property
    def explicit(self) -> bool:
        return self.acknowledgement_mode == "explicit"

    @property
    def acquire_mode(self) -> int:
        """``share_acquire_mode`` as sent in ShareFetch."""
        return ACQUIRE_MODES[self.share_acquire_mode]


class ShareConsumerKeywords(Generic[KT, VT]):
    """``AIOKafkaShareConsumer``'s constructor: its keywords, each declared above (or in
    ``ConnectionConfig``) with the same default (``tests/unit/test_config.py`` checks),
    built into one ShareConsumerConfig."""

    def __init__(
        self,
        *topics: str,
        group_id: str | None = None,
        bootstrap_servers: str | Sequence[str] = "localhost",
        client_id: str = "aiokafka-lead-share-consumer",
        key_deserializer: Callable[[bytes], KT] | None = None,
        value_deserializer: Callable[[bytes], VT] | None = None,
        acknowledgement_mode: str = "implicit",
        share_acquire_mode: str = "batch_optimized",
        max_poll_records: int = 500,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52_428_800,
        request_timeout_ms: int = 40_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        metadata_max_age_ms: int = 300_000,
        connections_max_idle_ms: int = 540_000,
        security_protocol: str = "PLAINTEXT",
        ssl_context: ssl.SSLContext | None = None,
        api_version: str | None = "auto",
        sasl_mechanism: str = "PLAIN",
        sasl_plain_username: str | None = None,
        sasl_plain_password: str | None = None,
        sasl_oauth_token_provider: AbstractTokenProvider | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        client_rack: str | None = None,
        acknowledgement_commit_callback: AckResult | None = None,
        **unsupported: Any,
    ) -> None:
        """``group_id`` is required: a share consumer always belongs to a share group.

        ``acknowledgement_mode``: "implicit" (every record a poll delivered and the
        application did not acknowledge is accepted by the next poll or ``commit()``) or
        "explicit" (each delivered record must be acknowledged before the next poll).
        ``share_acquire_mode``: "batch_optimized" (the broker may hand out whole batches
        beyond ``max_poll_records``) or "record_limit" (KIP-1206: never more than
        ``max_poll_records`` acquired per fetch). ``acknowledgement_commit_callback(offsets,
        error)`` is called with the outcome of every acknowledgement sent in the background
        ({partition: offsets}, None on success).
        """
        self._configure(topics, ShareConsumerConfig.build(options_of(locals()), unsupported))

    def _configure(self, topics: tuple[str, ...], config: ShareConsumerConfig) -> None:
        raise NotImplementedError


__all__ = [
    "ACKNOWLEDGEMENT_MODES",
    "ACQUIRE_MODES",
    "AckResult",
    "ShareConsumerConfig",
    "ShareConsumerKeywords",
]
