"""The share consumer's configuration, each option declared once (see
:mod:`aiokafka_lead.config.options`): the shared connection settings, the fetch options whose
meaning is the consumer's (their declarations reused from ``FetchConfig`` /
``ConsumerConfig``), then the share consumer's own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aiokafka_lead.config.options import Rule, choices, option, override
from aiokafka_lead.consumer.config import ConsumerConfig, FetchConfig, check_fetch_sizes
from aiokafka_lead.errors import KafkaConfigurationError, KafkaError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.structs import TopicPartition

KT = TypeVar("KT")
VT = TypeVar("VT")

ACKNOWLEDGEMENT_MODES = ("implicit", "explicit")
#: ShareFetch v2 ShareAcquireMode
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1
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
    #: the constructor's keyword order (the other keywords follow in declaration order)
    KEYWORD_ORDER = (
        "group_id", "bootstrap_servers", "client_id", "key_deserializer", "value_deserializer",
        "acknowledgement_mode", "share_acquire_mode", "max_poll_records", "fetch_max_wait_ms",
        "fetch_min_bytes", "fetch_max_bytes", "request_timeout_ms", "retry_backoff_ms",
        "retry_backoff_max_ms", "metadata_max_age_ms", "connections_max_idle_ms", "security_protocol",
        "ssl_context", "api_version",
    )
    #: the constructor's docstring
    KEYWORDS_DOC = """``group_id`` is required: a share consumer always belongs to a share group.

    ``acknowledgement_mode``: "implicit" (every record a poll delivered and the
    application did not acknowledge is accepted by the next poll or ``commit()``) or
    "explicit" (each delivered record must be acknowledged before the next poll).
    ``share_acquire_mode``: "batch_optimized" (the broker may hand out whole batches
    beyond ``max_poll_records``) or "record_limit" (KIP-1206: never more than
    ``max_poll_records`` acquired per fetch). ``acknowledgement_commit_callback(offsets,
    error)`` is called with the outcome of every acknowledgement sent in the background
    ({partition: offsets}, None on success).
    """

    client_id: str | None = override(
        ConnectionConfig, "client_id", "aiokafka-lead-share-consumer", keyword_type="str"
    )
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
        check_fetch_sizes(self.fetch_min_bytes, self.fetch_max_bytes)

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


__all__ = [
    "ACKNOWLEDGEMENT_MODES",
    "ACQUIRE_MODES",
    "AckResult",
    "ShareConsumerConfig",
]
