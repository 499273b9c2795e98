"""Request handlers by api key, and the version range the fake advertises for each.

The ranges are the client's own (``CLIENT_VERSIONS`` in ``protocol/versions.py``), so a client
talking to the fake uses the same versions it would use with a Kafka 4.x broker; a test
can lower any maximum with ``FakeCluster(max_versions=...)`` or ``cap_versions``.
"""

from __future__ import annotations

from aiokafka_lead.protocol import generated as msg
from aiokafka_lead.protocol.messages import Request
from aiokafka_lead.protocol.versions import CLIENT_VERSIONS
from aiokafka_lead.testing.fake.handlers.common import Handler
from aiokafka_lead.testing.fake.handlers.consumer_groups import (
    handle_consumer_group_describe,
    handle_consumer_group_heartbeat,
)
from aiokafka_lead.testing.fake.handlers.fetch import handle_fetch
from aiokafka_lead.testing.fake.handlers.groups import (
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_offset_commit,
    handle_offset_fetch,
    handle_sync_group,
)
from aiokafka_lead.testing.fake.handlers.metadata import (
    handle_api_versions,
    handle_find_coordinator,
    handle_init_producer_id,
    handle_metadata,
)
from aiokafka_lead.testing.fake.handlers.offsets import (
    handle_list_offsets,
    handle_offset_for_leader_epoch,
)
from aiokafka_lead.testing.fake.handlers.produce import handle_produce
from aiokafka_lead.testing.fake.handlers.share_groups import (
    handle_share_acknowledge,
    handle_share_fetch,
    handle_share_group_heartbeat,
)
from aiokafka_lead.testing.fake.handlers.telemetry import (
    handle_get_telemetry_subscriptions,
    handle_push_telemetry,
)
from aiokafka_lead.testing.fake.handlers.transactions import (
    handle_add_offsets_to_txn,
    handle_add_partitions_to_txn,
    handle_end_txn,
    handle_txn_offset_commit,
)

#: the request each handler answers
_BY_REQUEST: dict[type[Request], Handler] = {
    msg.ProduceRequest: handle_produce,
    msg.FetchRequest: handle_fetch,
    msg.ListOffsetsRequest: handle_list_offsets,
    msg.MetadataRequest: handle_metadata,
    msg.OffsetCommitRequest: handle_offset_commit,
    msg.OffsetFetchRequest: handle_offset_fetch,
    msg.FindCoordinatorRequest: handle_find_coordinator,
    msg.JoinGroupRequest: handle_join_group,
    msg.HeartbeatRequest: handle_heartbeat,
    msg.LeaveGroupRequest: handle_leave_group,
    msg.SyncGroupRequest: handle_sync_group,
    msg.ApiVersionsRequest: handle_api_versions,
    msg.InitProducerIdRequest: handle_init_producer_id,
    msg.OffsetForLeaderEpochRequest: handle_offset_for_leader_epoch,
    msg.AddPartitionsToTxnRequest: handle_add_partitions_to_txn,
    msg.AddOffsetsToTxnRequest: handle_add_offsets_to_txn,
    msg.EndTxnRequest: handle_end_txn,
    msg.TxnOffsetCommitRequest: handle_txn_offset_commit,
    msg.ConsumerGroupHeartbeatRequest: handle_consumer_group_heartbeat,
    msg.ConsumerGroupDescribeRequest: handle_consumer_group_describe,
    msg.ShareGroupHeartbeatRequest: handle_share_group_heartbeat,
    msg.ShareFetchRequest: handle_share_fetch,
    msg.ShareAcknowledgeRequest: handle_share_acknowledge,
    msg.GetTelemetrySubscriptionsRequest: handle_get_telemetry_subscriptions,
    msg.PushTelemetryRequest: handle_push_telemetry,
}

#: api key -> handler
HANDLERS: dict[int, Handler] = {cls.API_KEY: handler for cls, handler in _BY_REQUEST.items()}
#: api key -> (min, max) advertised: the client's own range (``protocol/versions.py``)
SUPPORTED: dict[int, tuple[int, int]] = {key: CLIENT_VERSIONS[key] for key in HANDLERS}

__all__ = ["HANDLERS", "SUPPORTED", "Handler"]
