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

from aiokafka_lead.properties import client_kwargs

EARLIEST = -2
LATEST = -1


class SparkOptionError(ValueError):
    """An option is missing, malformed, or conflicts with another."""


@dataclass(frozen=True)
class SourceOptions:
    """Everything a reader or writer needs; plain data, so it pickles to executors."""

    bootstrap_servers: str
    properties: tuple[tuple[str, str], ...]  # the kafka.* properties; clients are built from them where used
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: tuple[tuple[str, int], ...] = ()
    starting_offsets: str = "earliest"  # "earliest", "latest" or JSON
    ending_offsets: str = "latest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    isolation_level: str = "read_uncommitted"
    poll_timeout_ms: int = 120_000
    topic: str | None = None  # sink: overrides the topic column

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


def parse_options(raw: Mapping[str, str], *, streaming: bool, sink: bool = False) -> SourceOptions:
    opts = {k.lower(): v for k, v in raw.items()}
    bootstrap = opts.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise SparkOptionError("option kafka.bootstrap.servers is required")
    props = {
        k[len("kafka.") :]: v
        for k, v in opts.items()
        if k.startswith("kafka.") and k != "kafka.bootstrap.servers"
    }
    isolation = props.pop("isolation.level", "read_uncommitted")
    try:
        client_kwargs(props)  # fail on the driver, before any task runs
    except ValueError as exc:
        raise SparkOptionError(f"kafka.* options: {exc}") from exc
    chosen = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k)]
    if not sink and len(chosen) != 1:
        raise SparkOptionError("exactly one of subscribe, subscribePattern or assign is required")
    assign: tuple[tuple[str, int], ...] = ()
    if opts.get("assign"):
        try:
            spec = json.loads(opts["assign"])
            assign = tuple(sorted((str(t), int(p)) for t, parts in spec.items() for p in parts))
        except (ValueError, TypeError, AttributeError) as exc:
            raise SparkOptionError(f'assign must be JSON like {{"topic": [0, 1]}}: {exc}') from exc
    if streaming and "endingoffsets" in opts:
        raise SparkOptionError("endingOffsets is for batch queries only")
    max_per_trigger = opts.get("maxoffsetspertrigger")
    return SourceOptions(
        bootstrap_servers=bootstrap,
        properties=tuple(sorted(props.items())),
        subscribe=tuple(t.strip() for t in opts.get("subscribe", "").split(",") if t.strip()),
        subscribe_pattern=opts.get("subscribepattern") or None,
        assign=assign,
        starting_offsets=opts.get("startingoffsets", "latest" if streaming else "earliest"),
        ending_offsets=opts.get("endingoffsets", "latest"),
        max_offsets_per_trigger=int(max_per_trigger) if max_per_trigger else None,
        fail_on_data_loss=_bool(opts.get("failondataloss", "true"), "failOnDataLoss"),
        include_headers=_bool(opts.get("includeheaders", "false"), "includeHeaders"),
        isolation_level=isolation,
        poll_timeout_ms=int(opts.get("kafkaconsumer.polltimeoutms", "120000")),
        topic=opts.get("topic"),
    )
