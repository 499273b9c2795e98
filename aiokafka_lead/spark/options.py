"""Options of the Spark data source, named and interpreted like Spark's built-in Kafka connector.

Spark hands option keys to Python data sources lower-cased (``startingOffsets`` arrives as
``startingoffsets``), so lookups here are case-insensitive. ``kafka.*`` options other than
``kafka.bootstrap.servers`` are Java-style client properties (security.protocol,
sasl.jaas.config, ssl.truststore.location, ...), turned into client keywords by the same
code as the CLI's ``--admin.config``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka_lead.config.properties import client_kwargs

EARLIEST = -2
LATEST = -1
#: the strategy names, in the order Spark's connector lists them in its errors
STRATEGIES = ("subscribe", "subscribepattern", "assign")
#: consumer properties the connector manages itself (Spark's connector refuses them too)
UNSUPPORTED_PROPERTIES = {
    "auto.offset.reset": (
        "Kafka option 'auto.offset.reset' is not supported. Instead set the source option "
        "'startingOffsets' to 'earliest' or 'latest' to specify where to start."
    ),
    "key.deserializer": (
        "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays "
        "with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys."
    ),
    "value.deserializer": (
        "Kafka option 'value.deserializer' is not supported as values are deserialized as byte "
        "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the values."
    ),
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}
#: Spark's JavaUtils.timeStringAsMs suffixes
_TIME_UNITS_MS = {
    "us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000
}  # fmt: skip


class SparkOptionError(ValueError):
    """An option is missing, malformed, or conflicts with another."""


@dataclass(frozen=True)
class Bound:
    """Where a batch range starts or ends: the first of a timestamp for every partition
    (``startingTimestamp``), timestamps per partition (``...OffsetsByTimestamp``) or offsets
    (``...Offsets``: "earliest", "latest" or JSON), in that order of preference."""

    offsets: str
    by_timestamp: str | None = None  # JSON {"topic": {"0": ms}}
    timestamp: int | None = None  # one timestamp for every partition

    @property
    def is_timestamp(self) -> bool:
        return self.timestamp is not None or self.by_timestamp is not None


@dataclass(frozen=True)
class SourceOptions:
    """Everything a reader or writer needs; plain data, so it pickles to executors."""

    bootstrap_servers: str
    properties: tuple[tuple[str, str], ...]  # the kafka.* properties; clients are built from them where used
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: tuple[tuple[str, int], ...] = ()
    starting: Bound = Bound("earliest")
    ending: Bound = Bound("latest")
    #: startingOffsetsByTimestampStrategy: "error" (no offset matched fails) or "latest"
    timestamp_strategy: str = "error"
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    group_id_prefix: str = "spark-kafka-relation"
    fail_on_data_loss: bool = True
    include_headers: bool = False
    isolation_level: str = "read_uncommitted"
    poll_timeout_ms: int = 120_000
    topic: str | None = None  # sink: overrides the topic column

    @property
    def starting_offsets(self) -> str:
        return self.starting.offsets

    @property
    def ending_offsets(self) -> str:
        return self.ending.offsets

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the clients, built where they are used (ssl contexts do not pickle)."""
        return client_kwargs(dict(self.properties))

    @property
    def pattern(self) -> re.Pattern[str] | None:
        return re.compile(self.subscribe_pattern) if self.subscribe_pattern else None


def _bool(value: str, name: str) -> bool:
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise SparkOptionError(f"option {name} must be true or false, not {value!r}")


def _long(value: str, name: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise SparkOptionError(f"option {name} must be a whole number, not {value!r}") from None


def time_string_ms(value: str, name: str) -> int:
    """A duration as Spark writes them ("15m", "500ms", "2h"; a bare number is milliseconds)."""
    found = re.fullmatch(r"\s*(-?\d+)\s*([a-z]*)\s*", value.lower())
    if found is None or found.group(2) not in ("", *_TIME_UNITS_MS):
        raise SparkOptionError(
            f"option {name}: {value!r} is not a duration (a number with one of "
            f"{', '.join(_TIME_UNITS_MS)}; no suffix means ms)"
        )
    return int(int(found.group(1)) * _TIME_UNITS_MS.get(found.group(2) or "ms", 1))


def _bound(opts: Mapping[str, str], prefix: str, default: str) -> Bound:
    """``startingTimestamp`` over ``startingOffsetsByTimestamp`` over ``startingOffsets``."""
    timestamp = opts.get(f"{prefix}timestamp")
    if timestamp is not None:
        try:
            return Bound(default, timestamp=int(timestamp.strip()))
        except ValueError:
            raise SparkOptionError(f"Expected a single long value, got {timestamp.strip()}") from None
    by_timestamp = opts.get(f"{prefix}offsetsbytimestamp")
    if by_timestamp is not None:
        return Bound(default, by_timestamp=by_timestamp.strip())
    return Bound(opts.get(f"{prefix}offsets", default))


def _check_strategy(opts: Mapping[str, str]) -> None:
    chosen = [k for k in STRATEGIES if k in opts]
    listed = ", ".join(STRATEGIES)
    if not chosen:
        raise SparkOptionError(
            f"One of the following options must be specified for Kafka source: {listed}. "
            "See the docs for more details."
        )
    if len(chosen) > 1:
        raise SparkOptionError(
            f"Only one of the following options can be specified for Kafka source: {listed}. "
            "See the docs for more details."
        )
    value = opts[chosen[0]]
    if chosen[0] == "assign" and not value.strip().startswith("{"):
        raise SparkOptionError(
            f"No topicpartitions to assign as specified value for option 'assign' is '{value}'"
        )
    if chosen[0] == "subscribe" and not [t for t in value.split(",") if t.strip()]:
        raise SparkOptionError(
            f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'"
        )
    if chosen[0] == "subscribepattern" and not value.strip():
        raise SparkOptionError(
            f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{value}'"
        )


def _positive(opts: Mapping[str, str], key: str, message: str) -> int | None:
    if key not in opts:
        return None
    value = _long(opts[key], key)
    if value <= 0:
        raise SparkOptionError(message)
    return value


def parse_options(raw: Mapping[str, str], *, streaming: bool, sink: bool = False) -> SourceOptions:
    """The options as Spark's Kafka connector reads them: names, defaults and error messages."""
    opts = {k.lower(): v for k, v in raw.items()}
    bootstrap = opts.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise SparkOptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
        )
    props = {
        k[len("kafka.") :]: v
        for k, v in opts.items()
        if k.startswith("kafka.") and k != "kafka.bootstrap.servers"
    }
    for name, message in UNSUPPORTED_PROPERTIES.items():
        if name in props and not sink:
            raise SparkOptionError(message)
    props.pop("group.id", None)  # the source reads in assign mode, without a consumer group
    isolation = props.pop("isolation.level", "read_uncommitted")
    try:
        client_kwargs(props)  # fail on the driver, before any task runs
    except ValueError as exc:
        raise SparkOptionError(f"kafka.* options: {exc}") from exc
    if not sink:
        _check_strategy(opts)
    assign: tuple[tuple[str, int], ...] = ()
    if opts.get("assign"):
        try:
            spec = json.loads(opts["assign"])
            assign = tuple(sorted((str(t), int(p)) for t, parts in spec.items() for p in parts))
        except (ValueError, TypeError, AttributeError) as exc:
            raise SparkOptionError(f'assign must be JSON like {{"topic": [0, 1]}}: {exc}') from exc
    if streaming and "endingoffsets" in opts:
        raise SparkOptionError("ending offset not valid in streaming queries")
    if streaming and "endingoffsetsbytimestamp" in opts:
        raise SparkOptionError("ending timestamp not valid in streaming queries")
    starting = _bound(opts, "starting", "latest" if streaming else "earliest")
    ending = _bound(opts, "ending", "latest")
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise SparkOptionError(
            f"startingOffsetsByTimestampStrategy must be error or latest, not {strategy!r}"
        )
    max_per_trigger = opts.get("maxoffsetspertrigger")
    min_per_trigger = opts.get("minoffsetspertrigger")
    if max_per_trigger is not None and min_per_trigger is not None:
        low = _long(min_per_trigger, "minOffsetsPerTrigger")
        high = _long(max_per_trigger, "maxOffsetsPerTrigger")
        if low > high:
            raise SparkOptionError(
                f"The value of minOffsetPerTrigger({low}) is higher than the maxOffsetsPerTrigger({high})."
            )
    return SourceOptions(
        bootstrap_servers=bootstrap,
        properties=tuple(sorted(props.items())),
        subscribe=tuple(t.strip() for t in opts.get("subscribe", "").split(",") if t.strip()),
        subscribe_pattern=opts.get("subscribepattern", "").strip() or None,
        assign=assign,
        starting=starting,
        ending=ending,
        timestamp_strategy=strategy,
        min_partitions=_positive(opts, "minpartitions", "minPartitions must be positive"),
        max_records_per_partition=_positive(
            opts, "maxrecordsperpartition", "maxrecordsperpartition must be positive"
        ),
        max_offsets_per_trigger=_long(max_per_trigger, "maxOffsetsPerTrigger") if max_per_trigger else None,
        min_offsets_per_trigger=_long(min_per_trigger, "minOffsetsPerTrigger") if min_per_trigger else None,
        max_trigger_delay_ms=time_string_ms(opts.get("maxtriggerdelay", "15m"), "maxTriggerDelay"),
        group_id_prefix=opts.get(
            "groupidprefix", "spark-kafka-source" if streaming else "spark-kafka-relation"
        ),
        fail_on_data_loss=_bool(opts.get("failondataloss", "true"), "failOnDataLoss"),
        include_headers=_bool(opts.get("includeheaders", "false"), "includeHeaders"),
        isolation_level=isolation,
        poll_timeout_ms=int(opts.get("kafkaconsumer.polltimeoutms", "120000")),
        topic=opts.get("topic", "").strip() or None,
    )
