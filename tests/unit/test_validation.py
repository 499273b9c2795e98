"""Configuration is validated at construction, the same way for every client."""

from __future__ import annotations

import importlib.util
import ssl
import sys
from typing import Any

import pytest

from aiokafka_lead import AIOKafkaAdminClient, AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.config.validation import parse_bootstrap
from aiokafka_lead.errors import KafkaConfigurationError, UnsupportedCodecError
from aiokafka_lead.share import AIOKafkaShareConsumer

CLIENTS: dict[str, Any] = {
    "producer": AIOKafkaProducer,
    "consumer": AIOKafkaConsumer,
    "admin": AIOKafkaAdminClient,
    "share": lambda **kwargs: AIOKafkaShareConsumer(group_id="g", **kwargs),
}


@pytest.mark.parametrize("codec", ["snappy", "zstd"])
def test_a_codec_without_its_library_is_refused_naming_the_extra(
    codec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: construction and send() succeeded, the sender died, flush() hung forever."""
    monkeypatch.setitem(sys.modules, "cramjam", None)  # import cramjam -> ImportError
    with pytest.raises(UnsupportedCodecError, match=r"pip install 'aiokafka_lead\[codecs\]'") as info:
        AIOKafkaProducer(compression_type=codec)
    assert isinstance(info.value, RuntimeError)  # what aiokafka raises for a missing codec library


def test_lz4_without_its_library_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lz4.frame", None)
    with pytest.raises(UnsupportedCodecError, match="lz4"):
        AIOKafkaProducer(compression_type="lz4")
    AIOKafkaProducer(compression_type="gzip")  # the standard library's


@pytest.mark.parametrize("kind", CLIENTS)
def test_unknown_keywords_are_named_with_the_closest_known_one(kind: str) -> None:
    with pytest.raises(
        TypeError, match=r"unsupported .*options: request_timeout \(did you mean request_timeout_ms\?\)"
    ):
        CLIENTS[kind](request_timeout=10)


BAD_NUMBERS = [
    ("producer", "request_timeout_ms", 0),
    ("producer", "linger_ms", -1),
    ("producer", "max_batch_size", 0),
    ("producer", "buffer_memory", -5),
    ("producer", "max_request_size", 0),
    ("producer", "max_block_ms", -1),
    ("producer", "retry_backoff_ms", -1),
    ("producer", "max_in_flight_requests_per_connection", 0),
    ("consumer", "session_timeout_ms", 0),
    ("consumer", "fetch_max_wait_ms", -1),
    ("share", "fetch_max_wait_ms", -1),
    ("share", "fetch_max_bytes", 0),
    ("share", "request_timeout_ms", 0),
    ("consumer", "max_partition_fetch_bytes", 0),
    ("consumer", "auto_commit_interval_ms", 0),
    ("consumer", "max_poll_records", 0),
    ("consumer", "metadata_max_age_ms", -1),
    ("admin", "request_timeout_ms", -1),
    ("admin", "connections_max_idle_ms", 0),
    ("admin", "retry_backoff_ms", "100"),
    ("consumer", "heartbeat_interval_ms", True),
]


@pytest.mark.parametrize(("kind", "name", "value"), BAD_NUMBERS)
def test_negative_zero_or_non_numeric_timeouts_and_sizes_are_refused(
    kind: str, name: str, value: Any
) -> None:
    with pytest.raises(KafkaConfigurationError, match=name) as info:
        CLIENTS[kind](**{name: value})
    assert isinstance(info.value, ValueError)  # what aiokafka raises for a bad value


CONTRADICTIONS = [
    ("producer", {"acks": 1, "enable_idempotence": True}, "needs acks='all'"),
    ("producer", {"enable_idempotence": True, "max_in_flight_requests_per_connection": 6}, "at most 5"),
    ("producer", {"delivery_timeout_ms": 1000, "request_timeout_ms": 2000}, "delivery_timeout_ms must be"),
    ("producer", {"acks": 2}, "acks must be one of"),
    ("producer", {"compression_type": "brotli"}, "compression_type must be one of"),
    ("consumer", {"heartbeat_interval_ms": 10_000, "session_timeout_ms": 10_000}, "must be lower than"),
    ("consumer", {"fetch_min_bytes": 100, "fetch_max_bytes": 10}, "fetch_min_bytes"),
    ("consumer", {"group_instance_id": "a"}, "needs a group_id"),
    ("consumer", {"auto_offset_reset": "smallest"}, "auto_offset_reset must be one of"),
    ("consumer", {"isolation_level": "serializable"}, "isolation_level must be one of"),
]


@pytest.mark.parametrize(("kind", "options", "message"), CONTRADICTIONS)
def test_contradictory_or_impossible_settings_are_refused(
    kind: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(KafkaConfigurationError, match=message):
        CLIENTS[kind](**options)


def _context() -> ssl.SSLContext:
    return ssl.create_default_context()


SECURITY = [
    ({"security_protocol": "TLS"}, "security_protocol must be one of"),
    ({"security_protocol": "SSL"}, "needs an ssl_context"),
    ({"ssl_context": "not a context", "security_protocol": "SSL"}, "must be an ssl.SSLContext"),
    ({"ssl_context": _context()}, "does not use TLS"),
    ({"security_protocol": "SASL_PLAINTEXT"}, "needs sasl_plain_username"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_plain_username": "u"}, "needs sasl_plain_password"),
    (
        {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "KERBEROS",
            "sasl_plain_username": "u",
            "sasl_plain_password": "p",
        },
        "sasl_mechanism must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI",
    ),
    (
        {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"},
        "needs sasl_oauth_token_provider",
    ),
    (
        {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER",
            "sasl_oauth_token_provider": "a-token",
        },
        "must implement token",
    ),
    (
        {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "GSSAPI",
            "sasl_kerberos_service_name": "",
        },
        "sasl_kerberos_service_name must be a non-empty string",
    ),
    ({"sasl_plain_username": "u", "sasl_plain_password": "p"}, "does not use SASL"),
]


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize(("options", "message"), SECURITY)
def test_tls_and_sasl_settings_that_cannot_work_are_refused(
    kind: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(KafkaConfigurationError, match=message):
        CLIENTS[kind](**options)


@pytest.mark.parametrize("kind", CLIENTS)
def test_gssapi_without_its_package_names_the_extra(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gssapi" else real_find_spec(name, *a)
    )
    with pytest.raises(KafkaConfigurationError, match=r"pip install 'aiokafka_lead\[gssapi\]'"):
        CLIENTS[kind](security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI")


@pytest.mark.parametrize(
    "servers",
    [
        "",
        " , ",
        "host:port",
        "host:0",
        "host:70000",
        "::1:9092",
        "[::1",
        "a b:9092",
        9092,
        [9092],
        ["h:1", None],
    ],
)
def test_malformed_bootstrap_servers_are_refused_at_construction(servers: Any) -> None:
    for client in CLIENTS.values():
        with pytest.raises(KafkaConfigurationError, match="bootstrap"):
            client(bootstrap_servers=servers)


def test_well_formed_bootstrap_servers_parse() -> None:
    assert parse_bootstrap("a:1, b ,[::1]:9093,[fe80::1]") == [
        ("a", 1),
        ("b", 9092),
        ("::1", 9093),
        ("fe80::1", 9092),
    ]
    assert parse_bootstrap(["h:9092"]) == [("h", 9092)]


def test_valid_settings_still_construct() -> None:
    AIOKafkaProducer(acks=1, linger_ms=0, max_block_ms=0, compression_type="gzip")
    AIOKafkaConsumer("t", group_id="g", group_instance_id="i", fetch_min_bytes=0, max_poll_records=None)
    AIOKafkaAdminClient(
        security_protocol="SASL_SSL",
        ssl_context=_context(),
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="u",
        sasl_plain_password="p",
    )
