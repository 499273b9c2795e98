"""GetTelemetrySubscriptions and PushTelemetry against the cluster's :class:`FakeTelemetry`."""

from __future__ import annotations

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest,
    PushTelemetryResponse,
)
from aiokafka_lead.testing.fake.telemetry import Push
from aiokafka_lead.testing.fake.view import ClusterView

_ZERO = GetTelemetrySubscriptionsResponse().client_instance_id


async def handle_get_telemetry_subscriptions(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: GetTelemetrySubscriptionsRequest
) -> GetTelemetrySubscriptionsResponse:
    t = cluster.telemetry
    assert t is not None  # not advertised without a receiver
    instance = request.client_instance_id
    return GetTelemetrySubscriptionsResponse(
        client_instance_id=t.new_instance() if instance == _ZERO else _ZERO,
        subscription_id=t.subscription_id,
        accepted_compression_types=list(t.codecs),
        push_interval_ms=t.interval_ms,
        telemetry_max_bytes=t.max_bytes,
        delta_temporality=t.delta,
        requested_metrics=list(t.prefixes),
    )


async def handle_push_telemetry(
    cluster: ClusterView, node_id: int, header: RequestHeader, request: PushTelemetryRequest
) -> PushTelemetryResponse:
    t = cluster.telemetry
    assert t is not None
    r = request
    push = Push(r.client_instance_id, r.subscription_id, r.terminating, r.compression_type, b"")
    error = t.receive(push, request.metrics)
    return PushTelemetryResponse(error_code=ErrorCode[error] if error else 0)
