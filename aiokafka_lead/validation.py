"""Constructor validation for every client: one table of rules, applied by option name.

``AIOKafkaProducer``, ``AIOKafkaConsumer`` and ``AIOKafkaAdminClient`` call
:func:`validate_options` first thing, with their keyword arguments, so a setting that
cannot work fails at construction (not at the first send, or in a background task):

* an unknown keyword: ``TypeError`` naming it (and the closest known name);
* a wrong type, a negative or zero timeout or size, contradictory settings, a security
  setting that cannot work, a malformed bootstrap address: :class:`KafkaConfigurationError`
  (aiokafka's name; also a ``ValueError``, which is what aiokafka raises);
* a compression codec whose library is missing: :class:`UnsupportedCodecError` naming the
  pip extra (also a ``RuntimeError``, which is what aiokafka raises).
"""

from __future__ import annotations

import difflib
import importlib.util
import ssl
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from numbers import Real
from typing import Any

from aiokafka_lead.errors import KafkaConfigurationError
from aiokafka_lead.records.compression import CompressionType, require_codec
from aiokafka_lead.structs import OffsetAndMetadata, TopicPartition

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
#: mechanisms that take sasl_plain_username / sasl_plain_password
PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
COMPRESSION = {
    None: CompressionType.NONE,
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}
ACKS_ALL = ("all", -1, "-1")

# Options that must be > 0, and options that must be >= 0 (None means "not set" where allowed).
POSITIVE = frozenset(
    {
        "request_timeout_ms",
        "metadata_max_age_ms",
        "connections_max_idle_ms",
        "max_batch_size",
        "max_request_size",
        "delivery_timeout_ms",
        "buffer_memory",
        "transaction_timeout_ms",
        "max_in_flight_requests_per_connection",
        "fetch_max_bytes",
        "max_partition_fetch_bytes",
        "auto_commit_interval_ms",
        "max_poll_interval_ms",
        "session_timeout_ms",
        "heartbeat_interval_ms",
        "rebalance_timeout_ms",
        "max_poll_records",
    }
)
NON_NEGATIVE = frozenset(
    {
        "linger_ms",
        "retry_backoff_ms",
        "retry_backoff_max_ms",
        "max_block_ms",
        "fetch_max_wait_ms",
        "fetch_min_bytes",
    }
)
CHOICES: dict[str, Collection[Any]] = {
    "compression_type": tuple(COMPRESSION),
    "auto_offset_reset": ("earliest", "latest", "none"),
    "isolation_level": ("read_uncommitted", "read_committed"),
    "security_protocol": SECURITY_PROTOCOLS,
    "acks": ("all", -1, "-1", 0, "0", 1, "1"),
    "group_protocol": ("classic", "consumer"),
    "connections_per_broker": (1, 2),
}
#: consumer keywords only the classic group protocol takes (KIP-848: the broker decides)
CLASSIC_ONLY = ("partition_assignment_strategy", "session_timeout_ms", "heartbeat_interval_ms")
#: the classic defaults when those keywords are not given
CLASSIC_SESSION_TIMEOUT_MS = 10_000
CLASSIC_HEARTBEAT_INTERVAL_MS = 3000


def warn_loop_argument(loop: object) -> None:
    """aiokafka still takes ``loop=`` with a DeprecationWarning; so do we (and ignore it)."""
    if loop is not None:
        warnings.warn(
            "The loop argument is deprecated and ignored: clients use the running event loop",
            DeprecationWarning,
            stacklevel=3,
        )


def options_of(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A constructor's keyword arguments, from ``locals()`` taken as its first statement."""
    return {k: v for k, v in arguments.items() if k not in ("self", "unsupported", "topics")}


def validate_options(client: str, options: Mapping[str, Any], unknown: Mapping[str, Any]) -> None:
    """Check a client's keyword arguments (``client``: "producer", "consumer" or "admin")."""
    if unknown:
        raise TypeError(f"unsupported {client} options: {_suggest(unknown, options)}")
    for name, value in options.items():
        if value is None and name in POSITIVE | NON_NEGATIVE:
            continue  # optional (rebalance_timeout_ms, max_poll_records)
        if name in POSITIVE:
            _number(name, value, minimum=0, inclusive=False)
        elif name in NON_NEGATIVE:
            _number(name, value, minimum=0, inclusive=True)
        elif name in CHOICES and value not in CHOICES[name]:
            shown = ", ".join(repr(c) for c in CHOICES[name] if not isinstance(c, int) or c >= 0)
            raise KafkaConfigurationError(f"{name} must be one of {shown}; not {value!r}")
    if "bootstrap_servers" in options:
        parse_bootstrap(options["bootstrap_servers"])
    if "client_id" in options and not isinstance(options["client_id"], str | None):
        raise KafkaConfigurationError(f"client_id must be a string, not {options['client_id']!r}")
    check_security(
        options.get("security_protocol", "PLAINTEXT"),
        options.get("ssl_context"),
        options.get("sasl_mechanism", "PLAIN"),
        options.get("sasl_plain_username"),
        options.get("sasl_plain_password"),
        token_provider=options.get("sasl_oauth_token_provider"),
        kerberos_service_name=options.get("sasl_kerberos_service_name", "kafka"),
    )
    for rule in _CROSS_RULES.get(client, ()):
        rule(options)


def _suggest(unknown: Mapping[str, Any], known: Collection[str]) -> str:
    out = []
    for name in sorted(unknown):
        close = difflib.get_close_matches(name, list(known), n=1)
        out.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return ", ".join(out)


def _number(name: str, value: Any, *, minimum: float, inclusive: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise KafkaConfigurationError(f"{name} must be a number, not {value!r}")
    if value < minimum or (value == minimum and not inclusive):
        bound = f">= {minimum}" if inclusive else f"> {minimum}"
        raise KafkaConfigurationError(f"{name} must be {bound}, not {value!r}")


def parse_bootstrap(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    """``"h1:9092,h2"`` or ``["h1:9092", "[::1]:9093"]`` -> ``[(host, port), ...]``."""
    if isinstance(servers, str):
        items: list[Any] = servers.split(",")
    elif isinstance(servers, Sequence):
        items = list(servers)
    else:
        raise KafkaConfigurationError(
            f"bootstrap_servers must be 'host:port,...' or a list of them, not {servers!r}"
        )
    out: list[tuple[str, int]] = []
    for raw in items:
        if not isinstance(raw, str):
            raise KafkaConfigurationError(f"bad bootstrap server {raw!r}: expected a 'HOST:PORT' string")
        item = raw.strip()
        if not item:
            continue
        if item.startswith("["):
            host, bracket, rest = item[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ("9092" if not rest and bracket else "?")
        elif item.count(":") > 1:
            host, port = "", "?"  # a bare IPv6 address is ambiguous: it needs [brackets]
        else:
            host, _, port = item.partition(":") if ":" in item else (item, "", "9092")
        if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in host):
            raise KafkaConfigurationError(
                f"bad bootstrap server {raw!r}: expected HOST:PORT (port 1-65535, IPv6 as [ADDR]:PORT)"
            )
        out.append((host, int(port)))
    if not out:
        raise KafkaConfigurationError("bootstrap_servers is empty")
    return out


def check_security(
    protocol: str,
    ssl_context: Any,
    sasl_mechanism: str,
    username: str | None,
    password: str | None,
    *,
    token_provider: Any = None,
    kerberos_service_name: Any = "kafka",
) -> None:
    """Settings that cannot work together fail here, not at the first connection."""
    if protocol not in SECURITY_PROTOCOLS:
        raise KafkaConfigurationError(
            f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, not {protocol!r}"
        )
    tls = protocol in ("SSL", "SASL_SSL")
    sasl = protocol in ("SASL_PLAINTEXT", "SASL_SSL")
    if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
        raise KafkaConfigurationError(
            f"ssl_context must be an ssl.SSLContext, not {type(ssl_context).__name__}"
        )
    if tls and ssl_context is None:
        raise KafkaConfigurationError(
            f"security_protocol={protocol} needs an ssl_context (e.g. ssl.create_default_context(cafile=...))"
        )
    if not tls and ssl_context is not None:
        raise KafkaConfigurationError(
            f"an ssl_context is given but security_protocol={protocol} does not use TLS: "
            "use 'SSL' or 'SASL_SSL'"
        )
    if ssl_context is not None and ssl_context.verify_mode == ssl.CERT_NONE and ssl_context.check_hostname:
        raise KafkaConfigurationError("ssl_context checks host names but verifies no certificate")
    if sasl:
        if sasl_mechanism not in SASL_MECHANISMS:
            raise KafkaConfigurationError(
                f"sasl_mechanism must be one of {', '.join(SASL_MECHANISMS)}, not {sasl_mechanism!r}"
            )
        if sasl_mechanism == "OAUTHBEARER":
            _check_token_provider(token_provider)
            return
        if sasl_mechanism == "GSSAPI":
            _check_kerberos(kerberos_service_name)
            return
        for name, value in (("sasl_plain_username", username), ("sasl_plain_password", password)):
            if not isinstance(value, str) or not value:
                raise KafkaConfigurationError(
                    f"security_protocol={protocol} with sasl_mechanism={sasl_mechanism} needs {name} "
                    "(a non-empty string)"
                )
    elif username is not None or password is not None:
        raise KafkaConfigurationError(
            f"SASL credentials are given but security_protocol={protocol} does not use SASL: "
            "use 'SASL_PLAINTEXT' or 'SASL_SSL'"
        )


def _check_token_provider(provider: Any) -> None:
    """aiokafka's rule: OAUTHBEARER needs an ``AbstractTokenProvider`` (any object with a
    ``token()`` method is taken; ``token()`` may be a coroutine function or a plain one)."""
    if provider is None:
        raise KafkaConfigurationError(
            "sasl_mechanism='OAUTHBEARER' needs sasl_oauth_token_provider, an "
            "aiokafka_lead.abc.AbstractTokenProvider (e.g. aiokafka_lead.auth.oidc.OIDCTokenProvider)"
        )
    if not callable(getattr(provider, "token", None)):
        raise KafkaConfigurationError(
            f"sasl_oauth_token_provider must implement token() (aiokafka_lead.abc.AbstractTokenProvider); "
            f"{type(provider).__name__} does not"
        )


def _check_kerberos(service_name: Any) -> None:
    if not isinstance(service_name, str) or not service_name:
        raise KafkaConfigurationError(
            f"sasl_kerberos_service_name must be a non-empty string, not {service_name!r}"
        )
    if importlib.util.find_spec("gssapi") is None:
        raise KafkaConfigurationError(
            "sasl_mechanism='GSSAPI' needs the gssapi package: pip install 'aiokafka_lead[gssapi]'"
        )


# ----------------------------------------------------------------- per client


def _producer(options: Mapping[str, Any]) -> None:
    acks_all = options["acks"] in ACKS_ALL
    idempotence = options["enable_idempotence"]
    if idempotence and not acks_all:
        raise KafkaConfigurationError("enable_idempotence=True needs acks='all'")
    if options["transactional_id"] is not None:
        if idempotence is False:
            raise KafkaConfigurationError(
                "a transactional producer needs enable_idempotence (leave it unset or True)"
            )
        if not acks_all:
            raise KafkaConfigurationError("a transactional producer needs acks='all'")
    if idempotence and options["max_in_flight_requests_per_connection"] > 5:
        raise KafkaConfigurationError(
            "enable_idempotence=True allows at most 5 in-flight requests per connection"
        )
    if options["delivery_timeout_ms"] < options["linger_ms"] + options["request_timeout_ms"]:
        raise KafkaConfigurationError(
            "delivery_timeout_ms must be at least linger_ms + request_timeout_ms (as in Java)"
        )
    require_codec(COMPRESSION[options["compression_type"]])


def _consumer(options: Mapping[str, Any]) -> None:
    _group_protocol(options)
    heartbeat = options["heartbeat_interval_ms"] or CLASSIC_HEARTBEAT_INTERVAL_MS
    session = options["session_timeout_ms"] or CLASSIC_SESSION_TIMEOUT_MS
    if heartbeat >= session:
        raise KafkaConfigurationError(
            f"heartbeat_interval_ms ({heartbeat}) must be lower than "
            f"session_timeout_ms ({session}), as in Java"
        )
    if options["fetch_min_bytes"] > options["fetch_max_bytes"]:
        raise KafkaConfigurationError("fetch_min_bytes must not exceed fetch_max_bytes")
    if options["group_instance_id"] is not None and options["group_id"] is None:
        raise KafkaConfigurationError("group_instance_id needs a group_id")


def _group_protocol(options: Mapping[str, Any]) -> None:
    """Java's ConsumerConfig rules: each group protocol refuses the other's settings."""
    if options["group_protocol"] == "classic":
        if options["group_remote_assignor"] is not None:
            raise KafkaConfigurationError("group_remote_assignor needs group_protocol='consumer'")
        return
    given = [name for name in CLASSIC_ONLY if options[name] is not None]
    if given:
        raise KafkaConfigurationError(
            f"{', '.join(given)} cannot be set with group_protocol='consumer': the broker assigns "
            "partitions (see group_remote_assignor) and sets the session timeout and heartbeat interval"
        )


_CROSS_RULES: dict[str, tuple[Callable[[Mapping[str, Any]], None], ...]] = {
    "producer": (_producer,),
    "consumer": (_consumer,),
}


def commit_offsets_argument(
    offsets: Mapping[TopicPartition, int | OffsetAndMetadata | tuple[Any, ...]],
) -> dict[TopicPartition, OffsetAndMetadata]:
    """Offsets to commit in aiokafka's forms (an offset, (offset, metadata) or OffsetAndMetadata
    per TopicPartition), checked at the call as aiokafka checks them."""
    if not offsets or not isinstance(offsets, Mapping):
        raise ValueError(offsets)
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, value in offsets.items():
        if not isinstance(tp, TopicPartition):
            raise TypeError("Key should be TopicPartition instance")
        if isinstance(value, OffsetAndMetadata):
            out[tp] = value
            continue
        if isinstance(value, int):
            offset, metadata = value, ""
        else:
            try:
                offset, metadata = value
            except (TypeError, ValueError) as exc:
                raise ValueError(offsets) from exc
            if not isinstance(metadata, str):
                raise TypeError("Metadata should be a string")
        out[tp] = OffsetAndMetadata(offset, metadata, -1)
    return out
