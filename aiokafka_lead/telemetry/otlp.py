"""OTLP ``MetricsData`` (opentelemetry/proto/metrics/v1/metrics.proto) as protobuf bytes: the
payload of a KIP-714 PushTelemetry request.

Written by hand for the few messages a push needs (MetricsData > ResourceMetrics > Resource,
ScopeMetrics > Metric > Gauge | Sum > NumberDataPoint, KeyValue > AnyValue), so pushing needs
no protobuf runtime. Field numbers are the ones of opentelemetry-proto 1.x; the tests decode
the output with the opentelemetry-proto package.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: AggregationTemporality
DELTA = 1
CUMULATIVE = 2

_VARINT, _FIXED64, _LEN = 0, 1, 2
_DOUBLE = struct.Struct("<d")
_UINT64 = struct.Struct("<Q")
_INT64 = struct.Struct("<q")


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _field(number: int, payload: bytes) -> bytes:
    return _tag(number, _LEN) + _varint(len(payload)) + payload


def _string(number: int, text: str) -> bytes:
    return _field(number, text.encode()) if text else b""


Attribute = tuple[str, "str | int | float | bool"]


def _any_value(value: str | int | float | bool) -> bytes:
    if isinstance(value, bool):
        return _tag(2, _VARINT) + _varint(int(value))
    if isinstance(value, int):
        return _tag(3, _VARINT) + _varint(value)
    if isinstance(value, float):
        return _tag(4, _FIXED64) + _DOUBLE.pack(value)
    return _field(1, value.encode())


def _key_value(number: int, key: str, value: str | int | float | bool) -> bytes:
    return _field(number, _string(1, key) + _field(2, _any_value(value)))


@dataclass(frozen=True, slots=True)
class Point:
    """One metric's one data point: a gauge, or a monotonic sum (``is_sum``)."""

    name: str
    value: float | int
    attributes: Sequence[Attribute]
    is_sum: bool
    unit: str = ""
    description: str = ""


def _data_point(point: Point, start_ns: int, time_ns: int) -> bytes:
    out = b"".join(_key_value(7, k, v) for k, v in point.attributes)
    if point.is_sum:
        out += _tag(2, _FIXED64) + _UINT64.pack(start_ns)
    out += _tag(3, _FIXED64) + _UINT64.pack(time_ns)
    if isinstance(point.value, int):
        out += _tag(6, _FIXED64) + _INT64.pack(point.value)
    else:
        out += _tag(4, _FIXED64) + _DOUBLE.pack(point.value)
    return out


def _metric(point: Point, temporality: int, start_ns: int, time_ns: int) -> bytes:
    data = _field(1, _data_point(point, start_ns, time_ns))
    head = _string(1, point.name) + _string(2, point.description) + _string(3, point.unit)
    if point.is_sum:
        return head + _field(7, data + _tag(2, _VARINT) + _varint(temporality) + _tag(3, _VARINT) + b"\x01")
    return head + _field(5, data)


def metrics_data(
    points: Iterable[Point],
    *,
    resource: Sequence[Attribute],
    scope: str,
    scope_version: str,
    temporality: int,
    start_ns: int,
    time_ns: int,
) -> bytes:
    """One ResourceMetrics with one ScopeMetrics holding every point; a sum's start time is
    ``start_ns`` (the previous push for deltas, the client's start for cumulative sums)."""
    metrics = b"".join(_field(2, _metric(p, temporality, start_ns, time_ns)) for p in points)
    scope_bytes = _field(1, _string(1, scope) + _string(2, scope_version))
    resource_bytes = _field(1, b"".join(_key_value(1, k, v) for k, v in resource))
    return _field(1, resource_bytes + _field(2, scope_bytes + metrics))
